// tools/train/data_setup.cpp — config "data" sections to data sets, and the model
// sizes they imply.
#include "tools/train/data_setup.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <new>
#include <optional>

#include "core/fingerprint.h"
#include "core/user_file.h"
#include "datasets/data_set_kind.h"
#include "datasets/io.h"
#include "datasets/user_data.h"
#include "models/kind.h"
#include "nn/json_section.h"

namespace ks::tools {

using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

// The keys every data set has; the data set's own follow them (its descriptor's,
// datasets/data_set_kind.h), once data.dataset has named it.
std::vector<KeyDoc> every_data_set_keys() {
  return {{"dataset", joined(data::data_set_names(), " | ")},
          {"fingerprints", "written by train: the content hash of each data file and tokenizer of the run"}};
}

// The share of <unk> among a split's ids (sources and targets).
double unknown_share(const data::Dataset& d) {
  if (d.lazy()) return 0.0;  // a streamed corpus is not read whole at start-up
  int64_t unk = 0, all = 0;
  for (const data::Example& e : d.examples) {
    for (int32_t id : e.tokens) unk += id == data::kUnkId;
    for (int32_t id : e.target) unk += id == data::kUnkId;
    all += int64_t(e.tokens.size() + e.target.size());
  }
  return all > 0 ? double(unk) / double(all) : 0.0;
}

const data::DataSetKind& find_data_set(const std::string& name) {
  if (const data::DataSetKind* kind = data::find_data_set_kind(name)) return *kind;
  const std::vector<std::string> names = data::data_set_names_sorted();
  const std::string near = nearest_key(name, names);
  throw Error(str("config: data.dataset: unknown data set '", name.substr(0, 64), "' (",
                  near.empty() ? std::string() : str("did you mean ", near, "? "), "known: ", listed(names, ", "),
                  ")"));
}

// The model kind a config without "model" gets on a task's examples (models/kind.h).
std::string model_for_task(data::Task task) { return models::default_model_for_task(data::task_name(task)); }

// Throws unless the model section's kind (when given) trains on `task`; an
// unknown kind's error says so (and that a plugin's needs the plugin).
void check_model_fits(const json& model, data::Task task) {
  if (!model.contains("model")) return;
  const json& given = model["model"];
  if (given.is_string() && models::model_kind(given.get<std::string>(), "model.").task == data::task_name(task)) return;
  throw Error(str("config: model.model: ", nn::json_excerpt(given), " cannot be trained on a ", data::task_name(task),
                  " data set (use \"", model_for_task(task), "\")"));
}

// The data section's reader: its table grows by the data set's own keys once
// data.dataset has named it.
struct DataSection {
  nn::JsonSection s;
  std::string name;
  const data::DataSetKind* kind;
  explicit DataSection(const json& section) : s(section, "data", every_data_set_keys()) {
    name = s.get<std::string>("dataset", "");
    kind = &find_data_set(name);
    s.allow(kind->keys());
  }
};

int64_t longest(const data::Splits& splits, bool target) {
  int64_t n = 0;
  for (const data::Dataset* d : {&splits.train, &splits.valid, &splits.test}) n = std::max(n, d->longest(target));
  return n;
}

// What the data fixes in a model section for a kind of `task`: each key with
// the data's value, set when the section lacks the key; a value the section
// gives must be an integer of at least `minimum` (when there is one), which
// `why` explains. A kind of the task takes these keys (models/kind.h).
struct DataFill {
  std::string key;
  int64_t value;
  std::optional<int64_t> minimum;
  std::string why;
};
std::vector<DataFill> data_fills(data::Task task, const data::Splits& splits, const json& model) {
  const data::Dataset& train = splits.train;
  // Tokenized data reserves id 0 for padding; raw pixel ids have no padding.
  const int64_t pad = train.tokenizer != nullptr ? data::kPadId : -1;
  const int64_t src_len = longest(splits, false), tgt_len = longest(splits, true);
  const int64_t vocab = train.vocab_size, classes = train.num_classes();
  switch (task) {
    case data::Task::LanguageModel:
      return {{"vocab_size", vocab, vocab, "the data's vocabulary"},
              {"pad_id", pad, std::nullopt, ""},
              {"max_len", src_len, src_len, "the data's longest sequence"}};
    case data::Task::Classification: {
      const int64_t positions = src_len + (model.value("pooling", std::string("mean")) == "cls" ? 1 : 0);
      return {{"vocab_size", vocab, vocab, "the data's vocabulary"},
              {"num_classes", classes, classes, "the data's classes"},
              {"pad_id", pad, std::nullopt, ""},
              {"max_len", positions, positions, "the data's longest sequence (plus [CLS])"}};
    }
    case data::Task::Seq2Seq: {
      const int64_t target = train.target_vocab_size;
      const int64_t positions = std::max(src_len, tgt_len + 1);  // targets gain bos (input) or eos (output)
      return {{"src_vocab_size", vocab, vocab, "the data's source vocabulary"},
              {"tgt_vocab_size", target, target, "the data's target vocabulary"},
              {"max_len", positions, positions, "the data's longest sequence (plus bos/eos)"}};
    }
  }
  return {};
}

// The task whose name (data::task_name) a model kind gives.
data::Task task_named(const std::string& name) {
  for (data::Task t : {data::Task::LanguageModel, data::Task::Classification, data::Task::Seq2Seq})
    if (name == data::task_name(t)) return t;
  throw Error(str("model kind: unknown data task '", name, "' (expected language_model, classification or seq2seq)"));
}

}  // namespace

TrainingData build_data(const json& section, uint64_t run_seed, const RunTokenizers& saved) {
  DataSection d(section);
  nn::JsonSection& s = d.s;
  const std::string& name = d.name;
  TrainingData out;
  data::DataSetContext ctx{
      .run_seed = run_seed, .saved_source = saved.source, .saved_target = saved.target, .warnings = &out.warnings};
  ctx.recorded = s.object("fingerprints");
  try {
    out.splits = d.kind->build(s, ctx);
  } catch (const Error& e) {
    const std::string what = e.what();
    throw Error(what.rfind("config: ", 0) == 0 ? what : str("data set '", name, "': ", what));
  } catch (const std::bad_alloc&) {
    throw Error(str("data set '", name, "': out of memory while building the splits"));
  }
  s.finish(str(" for dataset '", name, "'"));
  for (std::string& w : out.splits.warnings) out.warnings.push_back(str("data set '", name, "': ", std::move(w)));
  // Data sets with built-in tokenizers rebuild them; they must be the run's.
  auto same = [](const std::shared_ptr<const data::Tokenizer>& built,
                 const std::shared_ptr<const data::Tokenizer>& want) {
    return !want || !built || built == want || built->to_json() == want->to_json();
  };
  KS_CHECK(same(out.splits.train.tokenizer, saved.source) && same(out.splits.train.target_tokenizer, saved.target),
           "data set '", name,
           "': the tokenizer built from the data differs from the run's saved tokenizer; "
           "the data changed since the run was trained");
  // The tokenizer files as the run folder holds them: the saved ones as read,
  // or the bytes Tokenizer::save will write (tools/train/run_dir.h).
  const data::Dataset& train = out.splits.train;
  if (!saved.source_fingerprint.empty())
    ctx.fingerprints["tokenizer"] = saved.source_fingerprint;
  else if (train.tokenizer)
    ctx.fingerprints["tokenizer"] = fingerprint_of(train.tokenizer->file_text());
  if (!saved.target_fingerprint.empty())
    ctx.fingerprints["target_tokenizer"] = saved.target_fingerprint;
  else if (train.target_tokenizer && train.target_tokenizer != train.tokenizer)
    ctx.fingerprints["target_tokenizer"] = fingerprint_of(train.target_tokenizer->file_text());
  if (!ctx.fingerprints.empty() || !ctx.recorded.empty()) s.set_resolved("fingerprints", ctx.fingerprints);
  out.resolved = s.resolved();
  const char* split_names[] = {"train", "valid", "test"};
  const data::Dataset* sets[] = {&out.splits.train, &out.splits.valid, &out.splits.test};
  for (int i = 0; i < 3; ++i) {
    KS_CHECK(sets[i]->size() > 0, "data set '", name, "': the ", split_names[i], " split is empty");
    sets[i]->validate(str("data set '", name, "' ", split_names[i]));
    if (!sets[i]->tokenizer) continue;
    const double unk = unknown_share(*sets[i]);
    if (unk > 0.5)
      out.warnings.push_back(str("data set '", name, "': ", int(unk * 100), "% of the ", split_names[i],
                                 " split's tokens are <unk>, outside the ", sets[i]->tokenizer->type(),
                                 " vocabulary (is it the right file, or the right tokenizer?)"));
  }
  return out;
}

json describe_data(const json& section, json* docs) {
  DataSection d(section);
  std::vector<std::string> warnings;
  data::DataSetContext ctx{.saved_source = {}, .saved_target = {}, .warnings = &warnings, .describe_only = true};
  d.s.object("fingerprints");
  d.kind->build(d.s, ctx);
  d.s.finish(str(" for dataset '", d.name, "'"));
  json resolved = d.s.resolved();
  resolved.erase("fingerprints");  // written by train, from the files
  if (docs) {
    *docs = d.s.docs();
    docs->erase("fingerprints");
  }
  return resolved;
}

std::string model_for_data_set(const std::string& name) { return model_for_task(find_data_set(name).task); }

void check_model_for_data_set(const json& model, const std::string& name) {
  check_model_fits(model, find_data_set(name).task);
}

RunTokenizers read_run_tokenizers(const json& section, const fs::path& source_file, const fs::path& target_file,
                                  const ReadFile& read) {
  const json none = json::object();
  const json& recorded = section.is_object() && section.contains("fingerprints") && section["fingerprints"].is_object()
                             ? section["fingerprints"]
                             : none;
  // A run from before the record: the data set says which files it wrote.
  const std::string name = section.is_object() && section.value("dataset", json()).is_string()
                               ? section["dataset"].get<std::string>()
                               : std::string();
  const data::DataSetKind* kind = data::find_data_set_kind(name);
  const bool source = recorded.contains("tokenizer") || (kind && kind->tokenized);
  const bool target =
      recorded.contains("target_tokenizer") || (name == "tsv_seq2seq" && section.contains("target_tokenizer"));
  auto load = [&](const fs::path& file, const std::string& key, std::string& fingerprint) {
    const std::optional<std::string> text = read(file);
    KS_CHECK(text.has_value(), "run tokenizer ", file.string(),
             " is missing: the run's text becomes ids only "
             "through the tokenizer it was trained with (a new one would number them differently); restore the "
             "file from a copy of the run folder");
    fingerprint = fingerprint_of(*text);
    KS_CHECK(!recorded.contains(key) || recorded[key] == fingerprint, "run tokenizer ", file.string(),
             " is not the one the run was trained with: config.json records ", data::recorded_text(recorded, key),
             " (data.fingerprints.", key, "), the file now has ", fingerprint,
             "; it was changed or damaged since. "
             "Restore it from a copy of the run folder");
    return std::shared_ptr<const data::Tokenizer>(data::tokenizer_from_json(*text, file.string()));
  };
  RunTokenizers t;
  if (source) t.source = load(source_file, "tokenizer", t.source_fingerprint);
  t.target = t.source;
  if (target) t.target = load(target_file, "target_tokenizer", t.target_fingerprint);
  return t;
}

std::optional<std::string> read_file_if_present(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::nullopt;
  return data::read_file(path, "load_tokenizer", data::kMaxTokenizerFileBytes);
}

void drop_data_identity(json& was, json& now) {
  auto data_of = [](json& j) {
    return j.is_object() && j.contains("data") && j["data"].is_object() ? &j["data"] : nullptr;
  };
  json* a = data_of(was);
  json* b = data_of(now);
  if (a && b) {
    const json recorded = a->value("fingerprints", json::object());
    for (const char* key : {"train", "valid", "test"}) {
      if (!a->contains(key) || !b->contains(key) || (*a)[key] == (*b)[key] || !(*b)[key].is_string()) continue;
      // A moved file: the content at its new path is the one recorded for the old.
      if (recorded.is_object() && recorded.contains(key) &&
          recorded[key] == data::file_fingerprint((*b)[key].get<std::string>())) {
        a->erase(key);
        b->erase(key);
      }
    }
  }
  // holdout came after runs that cut their splits at random: a section without it meant "random".
  if (a && b && a->contains("holdout") != b->contains("holdout")) {
    json* with = a->contains("holdout") ? a : b;
    if ((*with)["holdout"] == data::holdout_name(data::Holdout::Random)) with->erase("holdout");
  }
  for (json* d : {a, b})
    if (d) d->erase("fingerprints");
}

void print_warnings(const std::vector<std::string>& warnings) {
  for (const std::string& w : warnings) std::fprintf(stderr, "warning: %s\n", w.c_str());
}

json complete_model_section(json model, const data::Splits& splits) {
  const data::Dataset& train = splits.train;
  check_model_fits(model, train.task);
  if (!model.contains("model")) model["model"] = model_for_task(train.task);
  for (const DataFill& f : data_fills(train.task, splits, model)) {
    if (!model.contains(f.key)) {
      model[f.key] = f.value;
    } else if (f.minimum) {
      KS_CHECK(model[f.key].is_number_integer(), "config: model.", f.key, ": expected an integer, got ",
               nn::json_excerpt(model[f.key]));
      KS_CHECK(model[f.key].get<int64_t>() >= *f.minimum, "config: model.", f.key, ": ", model[f.key].get<int64_t>(),
               " is too small; ", f.why, " needs at least ", *f.minimum);
    }
  }
  models::parse_model_config(model, "model.");  // every other key's error named as model.<key>
  return model;
}

std::vector<std::string> model_keys_from_data(const std::string& kind) {
  std::vector<std::string> keys;
  for (const DataFill& f : data_fills(task_named(models::model_kind(kind, "model.").task), {}, json::object()))
    keys.push_back(f.key);
  return keys;
}

}  // namespace ks::tools
