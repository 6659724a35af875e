// tools/data_setup.cpp — config "data" sections to data sets, and the model
// sizes they imply.
#include "tools/data_setup.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <new>

#include "datasets/brown.h"
#include "datasets/fashion_mnist.h"
#include "datasets/io.h"
#include "datasets/listops.h"
#include "datasets/seq2seq_tasks.h"
#include "datasets/user_data.h"
#include "models/config.h"
#include "tools/json_section.h"

namespace ks::tools {

using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

// The most examples a generator may be asked for per split: far beyond any
// run here, and a typo's extra digits fail at once instead of in the allocator.
constexpr int64_t kMaxGeneratedExamples = 100'000'000;

// What every builder gets besides its section.
struct BuildContext {
  uint64_t run_seed;
  const RunTokenizers& saved;
  std::vector<std::string>& warnings;
  // describe_data: read every key (so resolved() shows its default), build nothing.
  bool describe_only = false;
};

// The placeholder describe_data shows for a path that must be given.
const char* kRequiredPath = "<required: a file path>";

// The split sizes every generator takes.
struct Sizes {
  int64_t train, valid, test;
};
Sizes read_sizes(JsonSection& s, Sizes defaults) {
  return {s.get_between("train_size", defaults.train, 1, kMaxGeneratedExamples),
          s.get_between("valid_size", defaults.valid, 1, kMaxGeneratedExamples),
          s.get_between("test_size", defaults.test, 1, kMaxGeneratedExamples)};
}

// A path key: empty stays empty (when allowed), anything else becomes
// absolute, in the resolved section too.
fs::path read_path(JsonSection& s, const std::string& key, const std::string& fallback, bool required,
                   bool describe_only = false) {
  std::string p = s.get<std::string>(key, fallback);
  if (describe_only && required && p.empty()) {
    s.set_resolved(key, kRequiredPath);
    return {};
  }
  KS_CHECK(!required || !p.empty(), "config: ", s.where(key), ": required (a file path)");
  if (p.empty()) return {};
  fs::path absolute = fs::absolute(p).lexically_normal();
  s.set_resolved(key, absolute.string());
  return absolute;
}

fs::path cache_dir(JsonSection& s) {
  fs::path p = read_path(s, "cache_dir", "", false);
  return p.empty() ? data::data_cache_dir() : p;
}

// FNV-1a (64 bits) over the file's bytes, as "fnv1a64:<hex>": fast, and
// enough to notice an edited file (it is no defence against a forged one).
// Empty when the file cannot be read; its builder then names the problem.
std::string file_fingerprint(const fs::path& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return "";
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  uint64_t h = 14695981039346656037ull;
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), std::streamsize(buf.size()));
    for (std::streamsize i = 0; i < in.gcount(); ++i) h = (h ^ uint8_t(buf[size_t(i)])) * 1099511628211ull;
  }
  if (in.bad()) return "";
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", (unsigned long long)h);
  return std::string("fnv1a64:") + hex;
}

// Reads "fingerprints" (the hashes a run recorded), warns for each file that
// no longer matches, and records the current hashes in the resolved section.
void check_fingerprints(JsonSection& s, const std::vector<std::pair<std::string, fs::path>>& files,
                        BuildContext& ctx) {
  const json recorded = s.object("fingerprints");
  json now = json::object();
  for (const auto& [key, path] : files) {
    if (path.empty()) continue;
    const std::string h = file_fingerprint(path);
    if (h.empty()) continue;
    now[key] = h;
    if (recorded.contains(key) && recorded[key] != h)
      ctx.warnings.push_back(str(s.where(key), ": ", path.string(), " changed since the run recorded it (",
                                 recorded[key].is_string() ? recorded[key].get<std::string>() : std::string("?"),
                                 ", now ", h, "); its splits are not the ones the run was trained on"));
  }
  s.set_resolved("fingerprints", now);
}

data::Splits seq2seq_set(JsonSection& s, BuildContext& ctx) {
  data::Seq2SeqOptions o;
  o.task = data::parse_seq2seq_task(s.get<std::string>("task", "copy"));
  o.min_length = s.get_at_least("min_length", o.min_length, 1);
  o.max_length = s.get_at_least("max_length", o.max_length, o.min_length);
  o.num_symbols = s.get_at_least("num_symbols", o.num_symbols, 1);
  o.seed = s.get<uint64_t>("seed", ctx.run_seed);
  Sizes n = read_sizes(s, {10000, 500, 500});
  if (ctx.describe_only) return {};
  return data::seq2seq_splits(o, n.train, n.valid, n.test);
}

data::Splits listops_set(JsonSection& s, BuildContext& ctx) {
  data::ListOpsOptions o;
  o.min_length = s.get_at_least("min_length", o.min_length, 1);
  o.max_length = s.get_at_least("max_length", o.max_length, o.min_length);
  o.max_depth = s.get_at_least("max_depth", o.max_depth, 1);
  o.max_args = s.get_at_least("max_args", o.max_args, 2);
  o.seed = s.get<uint64_t>("seed", ctx.run_seed);
  Sizes n = read_sizes(s, {96000, 2000, 2000});
  // One cache folder per generator setting: a cache is only ever read back
  // by the options that wrote it.
  fs::path cache = cache_dir(s);
  if (ctx.describe_only) return {};
  cache /= str("listops-", o.min_length, "-", o.max_length, "-d", o.max_depth, "-a",
                                      o.max_args, "-s", o.seed, "-n", n.train, "-", n.valid, "-", n.test);
  return data::listops(o, {n.train, n.valid, n.test}, cache);
}

data::Splits brown_lm_set(JsonSection& s, BuildContext& ctx) {
  data::BrownLMOptions o;
  o.seq_len = s.get_at_least("seq_len", o.seq_len, 2);
  o.lowercase = s.get<bool>("lowercase", o.lowercase);
  o.min_freq = s.get_at_least("min_freq", o.min_freq, 1);
  o.max_vocab = s.get_at_least("max_vocab", o.max_vocab, 0);
  o.split_seed = s.get<uint64_t>("split_seed", o.split_seed);
  fs::path cache = cache_dir(s);
  if (ctx.describe_only) return {};
  return data::brown_language_model(data::read_brown(data::fetch_brown(cache)), o);
}

data::Splits brown_genre_set(JsonSection& s, BuildContext& ctx) {
  data::BrownGenreOptions o;
  o.window = s.get_at_least("window", o.window, 1);
  o.split_seed = s.get<uint64_t>("split_seed", o.split_seed);
  fs::path cache = cache_dir(s);
  if (ctx.describe_only) return {};
  return data::brown_genre_classification(data::read_brown(data::fetch_brown(cache)), o);
}

data::Splits fashion_mnist_set(JsonSection& s, BuildContext& ctx) {
  data::FashionMnistOptions o;
  o.dir = read_path(s, "dir", o.dir.string(), true, ctx.describe_only);
  o.valid_size = s.get_at_least("valid_size", o.valid_size, 1);
  o.split_seed = s.get<uint64_t>("split_seed", o.split_seed);
  o.limit = s.get_at_least("limit", o.limit, 0);
  if (ctx.describe_only) return {};
  return data::fashion_mnist(o);
}

// The keys the three user-file formats share.
data::DataFiles read_files(JsonSection& s, BuildContext& ctx) {
  data::DataFiles f;
  f.train = read_path(s, "train", "", true, ctx.describe_only);
  f.valid = read_path(s, "valid", "", false);
  f.test = read_path(s, "test", "", false);
  f.valid_fraction = s.get_in("valid_fraction", f.valid_fraction, 0.0, 0.9);
  f.test_fraction = s.get_in("test_fraction", f.test_fraction, 0.0, 0.9);
  f.split_seed = s.get<uint64_t>("split_seed", f.split_seed);
  check_fingerprints(s, {{"train", f.train}, {"valid", f.valid}, {"test", f.test}}, ctx);
  return f;
}

// A tokenizer section ("tokenizer", "target_tokenizer") to a training recipe.
data::TokenizerOptions read_tokenizer_options(JsonSection& s, const std::string& key) {
  data::TokenizerOptions o;
  json tok_json = s.object(key);
  JsonSection tok(tok_json, s.where(key));
  o.type = tok.get<std::string>("type", o.type);
  KS_CHECK(o.type == "byte" || o.type == "char" || o.type == "word" || o.type == "bpe", "config: ", tok.where("type"),
           ": expected byte, char, word or bpe, got '", o.type, "'");
  o.vocab_size = tok.get_between("vocab_size", o.vocab_size, 0, data::kMaxVocabSize);  // what load_tokenizer accepts
  o.min_freq = tok.get_at_least("min_freq", o.min_freq, 1);
  o.lowercase = tok.get<bool>("lowercase", o.lowercase);
  o.split_punctuation = tok.get<bool>("split_punctuation", o.split_punctuation);
  tok.finish();
  // The resolved section shows the tokenizer with its defaults.
  s.set_resolved(key, tok.resolved());
  return o;
}

data::TextOptions read_text_options(JsonSection& s, BuildContext& ctx, bool tsv) {
  data::TextOptions o;
  o.train_tokenizer = read_tokenizer_options(s, "tokenizer");
  if (tsv) {
    o.header = s.get<bool>("header", o.header);
    o.max_length = s.get_between("max_length", o.max_length, 0, models::kMaxLength);
  } else {
    o.seq_len = s.get_between("seq_len", o.seq_len, 2, models::kMaxLength);
  }
  // A run reads its files with the tokenizers it was trained with.
  o.tokenizer = ctx.saved.source;
  return o;
}

data::Splits text_set(JsonSection& s, BuildContext& ctx) {
  data::DataFiles f = read_files(s, ctx);
  data::TextOptions o = read_text_options(s, ctx, false);
  if (ctx.describe_only) return {};
  return data::text_language_model(f, o);
}
data::Splits tsv_classification_set(JsonSection& s, BuildContext& ctx) {
  data::DataFiles f = read_files(s, ctx);
  data::TextOptions o = read_text_options(s, ctx, true);
  if (s.has("classes")) {
    json classes = s.get<json>("classes", json::array());
    KS_CHECK(classes.is_array() && std::all_of(classes.begin(), classes.end(), [](const json& c) { return c.is_string(); }),
             "config: ", s.where("classes"), ": expected a list of strings, got ", nn::json_excerpt(classes));
    o.classes = classes.get<std::vector<std::string>>();
  }
  if (ctx.describe_only) return {};
  return data::tsv_classification(f, o);
}
data::Splits tsv_seq2seq_set(JsonSection& s, BuildContext& ctx) {
  data::DataFiles f = read_files(s, ctx);
  data::TextOptions o = read_text_options(s, ctx, true);
  if (s.has("target_tokenizer")) o.train_target_tokenizer = read_tokenizer_options(s, "target_tokenizer");
  o.target_tokenizer = ctx.saved.target;
  if (ctx.describe_only) return {};
  return data::tsv_seq2seq(f, o);
}

// The share of <unk> among a split's ids (sources and targets).
double unknown_share(const data::Dataset& d) {
  int64_t unk = 0, all = 0;
  for (const data::Example& e : d.examples) {
    for (int32_t id : e.tokens) unk += id == data::kUnkId;
    for (int32_t id : e.target) unk += id == data::kUnkId;
    all += int64_t(e.tokens.size() + e.target.size());
  }
  return all > 0 ? double(unk) / double(all) : 0.0;
}

using Builder = std::function<data::Splits(JsonSection&, BuildContext&)>;
struct DataSetKind {
  Builder build;
  const char* model;  // the model family its task trains
};
const std::map<std::string, DataSetKind>& builders() {
  static const std::map<std::string, DataSetKind> table = {
      {"seq2seq", {seq2seq_set, "seq2seq"}},
      {"listops", {listops_set, "encoder_classifier"}},
      {"brown_lm", {brown_lm_set, "decoder_lm"}},
      {"brown_genre", {brown_genre_set, "encoder_classifier"}},
      {"fashion_mnist", {fashion_mnist_set, "encoder_classifier"}},
      {"text", {text_set, "decoder_lm"}},
      {"tsv_classification", {tsv_classification_set, "encoder_classifier"}},
      {"tsv_seq2seq", {tsv_seq2seq_set, "seq2seq"}}};
  return table;
}

const DataSetKind& find_data_set(const std::string& name) {
  auto it = builders().find(name);
  if (it == builders().end()) {
    std::string known;
    for (auto& [k, _] : builders()) known += (known.empty() ? "" : ", ") + k;
    throw Error(str("config: data.dataset: unknown data set '", name.substr(0, 64), "' (known: ", known, ")"));
  }
  return it->second;
}

int64_t longest(const data::Splits& splits, bool target) {
  int64_t n = 0;
  for (const data::Dataset* d : {&splits.train, &splits.valid, &splits.test})
    for (const data::Example& e : d->examples) n = std::max<int64_t>(n, int64_t(target ? e.target.size() : e.tokens.size()));
  return n;
}

// Sets model[key] to `value` when absent; otherwise checks it against `minimum`.
void fill_at_least(json& model, const std::string& key, int64_t value, int64_t minimum, const std::string& why) {
  if (!model.contains(key)) {
    model[key] = value;
    return;
  }
  KS_CHECK(model[key].is_number_integer(), "config: model.", key, ": expected an integer, got ", nn::json_excerpt(model[key]));
  KS_CHECK(model[key].get<int64_t>() >= minimum, "config: model.", key, ": ", model[key].get<int64_t>(), " is too small; ",
           why, " needs at least ", minimum);
}

}  // namespace

TrainingData build_data(const json& section, uint64_t run_seed, const RunTokenizers& saved) {
  JsonSection s(section, "data");
  const std::string name = s.get<std::string>("dataset", "");
  const DataSetKind& kind = find_data_set(name);
  TrainingData out;
  BuildContext ctx{run_seed, saved, out.warnings};
  try {
    out.splits = kind.build(s, ctx);
  } catch (const Error& e) {
    const std::string what = e.what();
    throw Error(what.rfind("config: ", 0) == 0 ? what : str("data set '", name, "': ", what));
  } catch (const std::bad_alloc&) {
    throw Error(str("data set '", name, "': out of memory while building the splits"));
  }
  s.finish(str(" for dataset '", name, "'"));
  out.resolved = s.resolved();
  for (std::string& w : out.splits.warnings) out.warnings.push_back(str("data set '", name, "': ", std::move(w)));
  // Data sets with built-in tokenizers rebuild them; they must be the run's.
  auto same = [](const std::shared_ptr<const data::Tokenizer>& built, const std::shared_ptr<const data::Tokenizer>& want) {
    return !want || !built || built == want || built->to_json() == want->to_json();
  };
  KS_CHECK(same(out.splits.train.tokenizer, saved.source) && same(out.splits.train.target_tokenizer, saved.target),
           "data set '", name, "': the tokenizer built from the data differs from the run's saved tokenizer; "
           "the data changed since the run was trained");
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

json describe_data(const json& section) {
  JsonSection s(section, "data");
  const std::string name = s.get<std::string>("dataset", "");
  const DataSetKind& kind = find_data_set(name);
  std::vector<std::string> warnings;
  RunTokenizers none;
  BuildContext ctx{0, none, warnings, /*describe_only=*/true};
  kind.build(s, ctx);
  s.finish(str(" for dataset '", name, "'"));
  json resolved = s.resolved();
  resolved.erase("fingerprints");  // written by train, from the files
  return resolved;
}

std::string model_for_data_set(const std::string& name) { return find_data_set(name).model; }

void print_warnings(const std::vector<std::string>& warnings) {
  for (const std::string& w : warnings) std::fprintf(stderr, "warning: %s\n", w.c_str());
}

json complete_model_section(json model, const data::Splits& splits) {
  const data::Dataset& train = splits.train;
  const char* task_model = train.task == data::Task::LanguageModel    ? "decoder_lm"
                           : train.task == data::Task::Classification ? "encoder_classifier"
                                                                       : "seq2seq";
  if (!model.contains("model")) model["model"] = task_model;
  KS_CHECK(model["model"] == task_model, "config: model.model: ", nn::json_excerpt(model["model"]), " cannot be trained on a ",
           data::task_name(train.task), " data set (use \"", task_model, "\")");
  // Tokenized data reserves id 0 for padding; raw pixel ids have no padding.
  const bool has_pad = train.tokenizer != nullptr;
  const int64_t src_len = longest(splits, false), tgt_len = longest(splits, true);
  switch (train.task) {
    case data::Task::LanguageModel:
      fill_at_least(model, "vocab_size", train.vocab_size, train.vocab_size, "the data's vocabulary");
      if (!model.contains("pad_id")) model["pad_id"] = has_pad ? data::kPadId : -1;
      fill_at_least(model, "max_len", src_len, src_len, "the data's longest sequence");
      break;
    case data::Task::Classification: {
      fill_at_least(model, "vocab_size", train.vocab_size, train.vocab_size, "the data's vocabulary");
      fill_at_least(model, "num_classes", train.num_classes(), train.num_classes(), "the data's classes");
      if (!model.contains("pad_id")) model["pad_id"] = has_pad ? data::kPadId : -1;
      const int64_t positions = src_len + (model.value("pooling", std::string("mean")) == "cls" ? 1 : 0);
      fill_at_least(model, "max_len", positions, positions, "the data's longest sequence (plus [CLS])");
      break;
    }
    case data::Task::Seq2Seq: {
      fill_at_least(model, "src_vocab_size", train.vocab_size, train.vocab_size, "the data's source vocabulary");
      fill_at_least(model, "tgt_vocab_size", train.target_vocab_size, train.target_vocab_size,
                    "the data's target vocabulary");
      const int64_t positions = std::max(src_len, tgt_len + 1);  // targets gain bos (input) or eos (output)
      fill_at_least(model, "max_len", positions, positions, "the data's longest sequence (plus bos/eos)");
      break;
    }
  }
  return model;
}

}  // namespace ks::tools
