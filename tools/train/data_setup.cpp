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
#include "datasets/brown.h"
#include "datasets/fashion_mnist.h"
#include "datasets/io.h"
#include "datasets/listops.h"
#include "datasets/seq2seq_tasks.h"
#include "datasets/user_data.h"
#include "models/kind.h"
#include "nn/json_section.h"
#include "tools/cli/cli.h"

namespace ks::tools {

using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

// The most examples a generator may be asked for per split: far beyond any
// run here, and a typo's extra digits fail at once instead of in the allocator.
constexpr int64_t kMaxGeneratedExamples = 100'000'000;

using KeyDoc = KeyDoc;

// What every builder gets besides its section.
struct BuildContext {
  uint64_t run_seed;
  const RunTokenizers& saved;
  std::vector<std::string>& warnings;
  // describe_data: read every key (so resolved() shows its default), build nothing.
  bool describe_only = false;
  // The hashes the section recorded ("fingerprints"), and those of its files now.
  nlohmann::json recorded = nlohmann::json::object(), fingerprints = nlohmann::json::object();
};

// The keys of each data set, with what they mean (the defaults are the
// builders' below). Keys several data sets share mean the same in each.
const std::vector<KeyDoc> kEveryDataSet = {
    {"dataset", "seq2seq | listops | brown_lm | brown_genre | fashion_mnist | text | tsv_classification | tsv_seq2seq"},
    {"fingerprints", "written by train: the content hash of each data file and tokenizer of the run"}};
const std::vector<KeyDoc> kGeneratorKeys = {{"seed", "the generator's seed (default: the run's seed)"},
                                            {"train_size", "generated training examples"},
                                            {"valid_size", "generated validation examples"},
                                            {"test_size", "generated test examples"}};
const std::vector<KeyDoc> kSeq2SeqKeys = {{"task", "copy | reverse | sort | addition"},
                                          {"min_length", "the shortest source, in symbols (digits for addition)"},
                                          {"max_length", "the longest source, in symbols"},
                                          {"num_symbols", "copy, reverse, sort: the distinct symbols"}};
const std::vector<KeyDoc> kListOpsKeys = {
    {"min_length", "the shortest expression, in tokens"},
    {"max_length", "the longest expression, in tokens"},
    {"max_depth", "the deepest nesting of operators"},
    {"max_args", "the most arguments of one operator"},
    {"cache_dir", "where generated splits are kept; empty: $KEYSTONE_DATA or ~/.cache/keystone"}};
const std::vector<KeyDoc> kBrownLMKeys = {
    {"seq_len", "tokens per example window"},
    {"lowercase", "lowercase the words"},
    {"min_freq", "words seen fewer times in training become <unk>"},
    {"max_vocab", "the most word ids; 0: no limit"},
    {"split_seed", "the seed of the documents' train/valid/test split"},
    {"cache_dir", "where the corpus is kept; empty: $KEYSTONE_DATA or ~/.cache/keystone"}};
const std::vector<KeyDoc> kBrownGenreKeys = {
    {"window", "bytes per example"},
    {"split_seed", "the seed of the documents' train/valid/test split"},
    {"cache_dir", "where the corpus is kept; empty: $KEYSTONE_DATA or ~/.cache/keystone"}};
const std::vector<KeyDoc> kFashionMnistKeys = {{"dir", "the folder of the four idx .gz files"},
                                               {"valid_size", "validation images cut from the 60,000 training images"},
                                               {"split_seed", "the seed of that cut"},
                                               {"limit", "at most this many examples per split; 0: all"}};
const std::vector<KeyDoc> kFileKeys = {{"train", "the training file (required)"},
                                       {"valid", "the validation file; empty: cut from train"},
                                       {"test", "the test file; empty: cut from train"},
                                       {"valid_fraction", "the share of train cut for validation when valid is empty"},
                                       {"test_fraction", "the share of train cut for testing when test is empty"},
                                       {"split_seed", "the seed of those cuts (holdout random)"},
                                       {"holdout",
                                        "which lines are cut: random (drawn by split_seed) | last (the "
                                        "file's last lines: test at the very end, valid before it)"},
                                       {"tokenizer", "the tokenizer trained on the training split (its keys below)"}};
const std::vector<KeyDoc> kTsvKeys = {{"header", "the first line is a header, skipped"},
                                      {"max_length", "longer lines are cut to this many tokens; 0: kept whole"}};
const std::vector<KeyDoc> kTextKeys = {{"seq_len", "tokens per example window"}};
const std::vector<KeyDoc> kClassesKeys = {
    {"classes", "the labels in class order; absent: the training split's, sorted"}};
const std::vector<KeyDoc> kTargetTokenizerKeys = {
    {"target_tokenizer", "the targets' own tokenizer (its keys as tokenizer's); absent: one for both sides"}};
const std::vector<KeyDoc> kTokenizerKeys = {
    {"type", "byte | char | word | bpe"},
    {"vocab_size", "the most ids, specials included; 0: no limit (bpe: required, at least 260)"},
    {"min_freq", "char, word: rarer symbols become <unk>; bpe: stop merging below it"},
    {"lowercase", "word: lowercase ASCII letters"},
    {"split_punctuation", "word: each ASCII punctuation mark is a word"}};

std::vector<KeyDoc> join(std::initializer_list<const std::vector<KeyDoc>*> tables) {
  std::vector<KeyDoc> out;
  for (const auto* t : tables) out.insert(out.end(), t->begin(), t->end());
  return out;
}

// The placeholder describe_data shows for a path that must be given.
const char* kRequiredPath = "<required: a file path>";
// What describe_data shows for tsv_seq2seq's target_tokenizer, absent by default.
const char* kAbsentTargetTokenizer = "<absent>";

// The split sizes every generator takes.
struct Sizes {
  int64_t train, valid, test;
};
Sizes read_sizes(nn::JsonSection& s, Sizes defaults) {
  return {s.get_between("train_size", defaults.train, 1, kMaxGeneratedExamples),
          s.get_between("valid_size", defaults.valid, 1, kMaxGeneratedExamples),
          s.get_between("test_size", defaults.test, 1, kMaxGeneratedExamples)};
}

// A path key: empty stays empty (when allowed), anything else becomes
// absolute, in the resolved section too.
fs::path read_path(nn::JsonSection& s, const std::string& key, const std::string& fallback, bool required,
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

fs::path cache_dir(nn::JsonSection& s) {
  fs::path p = read_path(s, "cache_dir", "", false);
  return p.empty() ? data::data_cache_dir() : p;
}

// The file's fingerprint (core/fingerprint.h); empty when it cannot be read (its builder then names the problem).
std::string file_fingerprint(const fs::path& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return "";
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  Fnv1a f;
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), std::streamsize(buf.size()));
    f.add(buf.data(), size_t(in.gcount()));
  }
  if (in.bad()) return "";
  return f.text();
}

std::string recorded_text(const json& recorded, const std::string& key) {
  return recorded.contains(key) && recorded[key].is_string() ? recorded[key].get<std::string>() : std::string("?");
}

// Checks each file against the hash the run recorded ("fingerprints"): a
// recorded file that is gone is an error saying how to give its new place; one
// whose content changed gets a warning. Records the current hashes.
void check_fingerprints(nn::JsonSection& s, const std::vector<std::pair<std::string, fs::path>>& files,
                        BuildContext& ctx) {
  for (const auto& [key, path] : files) {
    if (path.empty()) continue;
    std::error_code ec;
    KS_CHECK(!ctx.recorded.contains(key) || fs::exists(path, ec), "config: ", s.where(key), ": ", path.string(),
             " does not exist (the run recorded its content, ", recorded_text(ctx.recorded, key),
             "); if the file moved, give its new path with --set ", s.where(key),
             "=NEW (keystone eval, keystone train --resume), which must hold that same content");
    const std::string h = file_fingerprint(path);
    if (h.empty()) continue;
    ctx.fingerprints[key] = h;
    if (ctx.recorded.contains(key) && ctx.recorded[key] != h)
      ctx.warnings.push_back(str(s.where(key), ": ", path.string(), " changed since the run recorded it (",
                                 recorded_text(ctx.recorded, key), ", now ", h,
                                 "); its splits are not the ones the run was trained on"));
  }
}

data::Splits seq2seq_set(nn::JsonSection& s, BuildContext& ctx) {
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

data::Splits listops_set(nn::JsonSection& s, BuildContext& ctx) {
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
  cache /= str("listops-", o.min_length, "-", o.max_length, "-d", o.max_depth, "-a", o.max_args, "-s", o.seed, "-n",
               n.train, "-", n.valid, "-", n.test);
  return data::listops(o, {n.train, n.valid, n.test}, cache);
}

data::Splits brown_lm_set(nn::JsonSection& s, BuildContext& ctx) {
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

data::Splits brown_genre_set(nn::JsonSection& s, BuildContext& ctx) {
  data::BrownGenreOptions o;
  o.window = s.get_at_least("window", o.window, 1);
  o.split_seed = s.get<uint64_t>("split_seed", o.split_seed);
  fs::path cache = cache_dir(s);
  if (ctx.describe_only) return {};
  return data::brown_genre_classification(data::read_brown(data::fetch_brown(cache)), o);
}

data::Splits fashion_mnist_set(nn::JsonSection& s, BuildContext& ctx) {
  data::FashionMnistOptions o;
  o.dir = read_path(s, "dir", o.dir.string(), true, ctx.describe_only);
  o.valid_size = s.get_at_least("valid_size", o.valid_size, 1);
  o.split_seed = s.get<uint64_t>("split_seed", o.split_seed);
  o.limit = s.get_at_least("limit", o.limit, 0);
  if (ctx.describe_only) return {};
  return data::fashion_mnist(o);
}

// The keys the three user-file formats share.
data::DataFiles read_files(nn::JsonSection& s, BuildContext& ctx) {
  data::DataFiles f;
  f.train = read_path(s, "train", "", true, ctx.describe_only);
  f.valid = read_path(s, "valid", "", false);
  f.test = read_path(s, "test", "", false);
  f.valid_fraction = s.get_in("valid_fraction", f.valid_fraction, 0.0, 0.9);
  f.test_fraction = s.get_in("test_fraction", f.test_fraction, 0.0, 0.9);
  f.split_seed = s.get<uint64_t>("split_seed", f.split_seed);
  const std::string holdout = s.get<std::string>("holdout", data::holdout_name(f.holdout));
  const std::optional<data::Holdout> h = data::holdout_of(holdout);
  KS_CHECK(h, "config: ", s.where("holdout"), ": expected random or last, got ", nn::json_excerpt(json(holdout)));
  f.holdout = *h;
  check_fingerprints(s, {{"train", f.train}, {"valid", f.valid}, {"test", f.test}}, ctx);
  return f;
}

// A tokenizer section ("tokenizer", "target_tokenizer") to a training recipe.
data::TokenizerOptions read_tokenizer_options(nn::JsonSection& s, const std::string& key) {
  data::TokenizerOptions o;
  json tok_json = s.object(key);
  nn::JsonSection tok(tok_json, s.where(key), kTokenizerKeys);
  o.type = tok.get<std::string>("type", o.type);
  KS_CHECK(data::is_tokenizer_type(o.type), "config: ", tok.where("type"), ": expected ", data::tokenizer_types(),
           ", got '", o.type, "'");
  o.vocab_size = tok.get_between("vocab_size", o.vocab_size, 0, data::kMaxVocabSize);  // what load_tokenizer accepts
  o.min_freq = tok.get_at_least("min_freq", o.min_freq, 1);
  o.lowercase = tok.get<bool>("lowercase", o.lowercase);
  o.split_punctuation = tok.get<bool>("split_punctuation", o.split_punctuation);
  tok.finish();
  // The resolved section shows the tokenizer with its defaults.
  s.set_resolved(key, tok.resolved());
  s.add_docs(key, tok.docs());
  return o;
}

data::TextOptions read_text_options(nn::JsonSection& s, BuildContext& ctx, bool tsv) {
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

data::Splits text_set(nn::JsonSection& s, BuildContext& ctx) {
  data::DataFiles f = read_files(s, ctx);
  data::TextOptions o = read_text_options(s, ctx, false);
  if (ctx.describe_only) return {};
  return data::text_language_model(f, o);
}
data::Splits tsv_classification_set(nn::JsonSection& s, BuildContext& ctx) {
  data::DataFiles f = read_files(s, ctx);
  data::TextOptions o = read_text_options(s, ctx, true);
  if (s.has("classes")) {
    json classes = s.get<json>("classes", json::array());
    KS_CHECK(
        classes.is_array() && std::all_of(classes.begin(), classes.end(), [](const json& c) { return c.is_string(); }),
        "config: ", s.where("classes"), ": expected a list of strings, got ", nn::json_excerpt(classes));
    o.classes = classes.get<std::vector<std::string>>();
  }
  if (ctx.describe_only) return {};
  return data::tsv_classification(f, o);
}
data::Splits tsv_seq2seq_set(nn::JsonSection& s, BuildContext& ctx) {
  data::DataFiles f = read_files(s, ctx);
  data::TextOptions o = read_text_options(s, ctx, true);
  if (s.has("target_tokenizer"))
    o.train_target_tokenizer = read_tokenizer_options(s, "target_tokenizer");
  else if (ctx.describe_only)  // shown with its meaning too, though its default is to be absent
    s.get<std::string>("target_tokenizer", kAbsentTargetTokenizer);
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

using Builder = std::function<data::Splits(nn::JsonSection&, BuildContext&)>;
struct DataSetKind {
  Builder build;
  data::Task task;           // what its examples are for
  bool tokenized;            // its runs save tokenizer.json (pixel data has none)
  std::vector<KeyDoc> keys;  // its keys besides kEveryDataSet's
};
const std::map<std::string, DataSetKind>& builders() {
  using data::Task;
  static const std::map<std::string, DataSetKind> table = {
      {"seq2seq", {seq2seq_set, Task::Seq2Seq, true, join({&kSeq2SeqKeys, &kGeneratorKeys})}},
      {"listops", {listops_set, Task::Classification, true, join({&kListOpsKeys, &kGeneratorKeys})}},
      {"brown_lm", {brown_lm_set, Task::LanguageModel, true, kBrownLMKeys}},
      {"brown_genre", {brown_genre_set, Task::Classification, true, kBrownGenreKeys}},
      {"fashion_mnist", {fashion_mnist_set, Task::Classification, false, kFashionMnistKeys}},
      {"text", {text_set, Task::LanguageModel, true, join({&kFileKeys, &kTextKeys})}},
      {"tsv_classification",
       {tsv_classification_set, Task::Classification, true, join({&kFileKeys, &kTsvKeys, &kClassesKeys})}},
      {"tsv_seq2seq", {tsv_seq2seq_set, Task::Seq2Seq, true, join({&kFileKeys, &kTsvKeys, &kTargetTokenizerKeys})}}};
  return table;
}

const DataSetKind& find_data_set(const std::string& name) {
  auto it = builders().find(name);
  if (it == builders().end()) {
    std::string known;
    std::vector<std::string> names;
    for (auto& [k, _] : builders()) {
      known += (known.empty() ? "" : ", ") + k;
      names.push_back(k);
    }
    const std::string near = nearest_key(name, names);
    throw Error(str("config: data.dataset: unknown data set '", name.substr(0, 64), "' (",
                    near.empty() ? std::string() : str("did you mean ", near, "? "), "known: ", known, ")"));
  }
  return it->second;
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
  const DataSetKind* kind;
  explicit DataSection(const json& section) : s(section, "data", kEveryDataSet) {
    name = s.get<std::string>("dataset", "");
    kind = &find_data_set(name);
    s.allow(kind->keys);
  }
};

int64_t longest(const data::Splits& splits, bool target) {
  int64_t n = 0;
  for (const data::Dataset* d : {&splits.train, &splits.valid, &splits.test})
    for (const data::Example& e : d->examples)
      n = std::max<int64_t>(n, int64_t(target ? e.target.size() : e.tokens.size()));
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
  BuildContext ctx{run_seed, saved, out.warnings};
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
  RunTokenizers none;
  BuildContext ctx{0, none, warnings, /*describe_only=*/true};
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
  const auto kind = builders().find(name);
  const bool source = recorded.contains("tokenizer") || (kind != builders().end() && kind->second.tokenized);
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
             " is not the one the run was trained with: config.json records ", recorded_text(recorded, key),
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

std::string relocate_data_file(json& section, const std::string& assignment) {
  const size_t eq = assignment.find('=');
  const std::string dotted = assignment.substr(0, eq);
  const std::string key = dotted.rfind("data.", 0) == 0 ? dotted.substr(5) : "";
  if (eq == std::string::npos || eq + 1 == assignment.size() || (key != "train" && key != "valid" && key != "test"))
    throw cli::UsageError(str("--set ", assignment,
                              ": a trained run may only be given the new path of a data file "
                              "that moved, as data.train=PATH, data.valid=PATH or data.test=PATH"));
  const std::string given = assignment.substr(eq + 1);
  const json none = json::object();
  const json& recorded = section.is_object() && section.contains("fingerprints") && section["fingerprints"].is_object()
                             ? section["fingerprints"]
                             : none;
  KS_CHECK(recorded.contains(key), "--set ", assignment, ": the run recorded no content hash for ", dotted, ", so ",
           given, " cannot be checked to hold the data it was trained on");
  const fs::path path = fs::absolute(given).lexically_normal();
  check_regular_file(path.string(), str("--set ", assignment));  // the guard of every user-named file
  const std::string now = file_fingerprint(path);
  KS_CHECK(!now.empty(), "--set ", assignment, ": ", path.string(), " is not a readable file");
  const std::string old = section.value(key, json()).is_string() ? section[key].get<std::string>() : "?";
  KS_CHECK(recorded[key] == now, "--set ", assignment, ": ", path.string(),
           " is not the file the run was trained on: "
           "its content hash is ",
           now, ", the run recorded ", recorded_text(recorded, key), " for ", dotted, " (", old,
           "); give the path of the moved file itself");
  section[key] = path.string();
  return str(dotted, ": reading ", path.string(), " in place of ", old, " (the same content, ", now, ")");
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
          recorded[key] == file_fingerprint((*b)[key].get<std::string>())) {
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
