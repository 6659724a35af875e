// tools/data_setup.cpp — config "data" sections to data sets, and the model
// sizes they imply.
#include "tools/data_setup.h"

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>
#include <new>

#include "datasets/brown.h"
#include "datasets/fashion_mnist.h"
#include "datasets/io.h"
#include "datasets/listops.h"
#include "datasets/seq2seq_tasks.h"
#include "datasets/user_data.h"
#include "tools/json_section.h"

namespace ks::tools {

using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

// The split sizes every generator takes.
struct Sizes {
  int64_t train, valid, test;
};
Sizes read_sizes(JsonSection& s, Sizes defaults) {
  return {s.get_at_least("train_size", defaults.train, 1), s.get_at_least("valid_size", defaults.valid, 1),
          s.get_at_least("test_size", defaults.test, 1)};
}

// A path key: empty stays empty (when allowed), anything else becomes absolute.
fs::path read_path(JsonSection& s, const std::string& key, const std::string& fallback, bool required) {
  std::string p = s.get<std::string>(key, fallback);
  KS_CHECK(!required || !p.empty(), "config: ", s.where(key), ": required (a file path)");
  return p.empty() ? fs::path() : fs::absolute(p).lexically_normal();
}

fs::path cache_dir(JsonSection& s) {
  fs::path p = read_path(s, "cache_dir", "", false);
  return p.empty() ? data::data_cache_dir() : p;
}

data::Splits seq2seq_set(JsonSection& s, uint64_t seed) {
  data::Seq2SeqOptions o;
  o.task = data::parse_seq2seq_task(s.get<std::string>("task", "copy"));
  o.min_length = s.get_at_least("min_length", o.min_length, 1);
  o.max_length = s.get_at_least("max_length", o.max_length, o.min_length);
  o.num_symbols = s.get_at_least("num_symbols", o.num_symbols, 1);
  o.seed = s.get<uint64_t>("seed", seed);
  Sizes n = read_sizes(s, {10000, 500, 500});
  return data::seq2seq_splits(o, n.train, n.valid, n.test);
}

data::Splits listops_set(JsonSection& s, uint64_t seed) {
  data::ListOpsOptions o;
  o.min_length = s.get_at_least("min_length", o.min_length, 1);
  o.max_length = s.get_at_least("max_length", o.max_length, o.min_length);
  o.max_depth = s.get_at_least("max_depth", o.max_depth, 1);
  o.max_args = s.get_at_least("max_args", o.max_args, 2);
  o.seed = s.get<uint64_t>("seed", seed);
  Sizes n = read_sizes(s, {96000, 2000, 2000});
  // One cache folder per generator setting: a cache is only ever read back
  // by the options that wrote it.
  fs::path cache = cache_dir(s) / str("listops-", o.min_length, "-", o.max_length, "-d", o.max_depth, "-a",
                                      o.max_args, "-s", o.seed, "-n", n.train, "-", n.valid, "-", n.test);
  return data::listops(o, {n.train, n.valid, n.test}, cache);
}

data::Splits brown_lm_set(JsonSection& s, uint64_t) {
  data::BrownLMOptions o;
  o.seq_len = s.get_at_least("seq_len", o.seq_len, 2);
  o.lowercase = s.get<bool>("lowercase", o.lowercase);
  o.min_freq = s.get_at_least("min_freq", o.min_freq, 1);
  o.max_vocab = s.get_at_least("max_vocab", o.max_vocab, 0);
  o.split_seed = s.get<uint64_t>("split_seed", o.split_seed);
  return data::brown_language_model(data::read_brown(data::fetch_brown(cache_dir(s))), o);
}

data::Splits brown_genre_set(JsonSection& s, uint64_t) {
  data::BrownGenreOptions o;
  o.window = s.get_at_least("window", o.window, 1);
  o.split_seed = s.get<uint64_t>("split_seed", o.split_seed);
  return data::brown_genre_classification(data::read_brown(data::fetch_brown(cache_dir(s))), o);
}

data::Splits fashion_mnist_set(JsonSection& s, uint64_t) {
  data::FashionMnistOptions o;
  o.dir = read_path(s, "dir", o.dir.string(), true);
  o.valid_size = s.get_at_least("valid_size", o.valid_size, 1);
  o.split_seed = s.get<uint64_t>("split_seed", o.split_seed);
  o.limit = s.get_at_least("limit", o.limit, 0);
  return data::fashion_mnist(o);
}

// The keys the three user-file formats share.
data::DataFiles read_files(JsonSection& s) {
  data::DataFiles f;
  f.train = read_path(s, "train", "", true);
  f.valid = read_path(s, "valid", "", false);
  f.test = read_path(s, "test", "", false);
  f.valid_fraction = s.get_in("valid_fraction", f.valid_fraction, 0.0, 0.9);
  f.test_fraction = s.get_in("test_fraction", f.test_fraction, 0.0, 0.9);
  f.split_seed = s.get<uint64_t>("split_seed", f.split_seed);
  return f;
}

data::TextOptions read_text_options(JsonSection& s, bool tsv) {
  data::TextOptions o;
  json tok_json = s.object("tokenizer");
  JsonSection tok(tok_json, s.where("tokenizer"));
  o.train_tokenizer.type = tok.get<std::string>("type", o.train_tokenizer.type);
  KS_CHECK(o.train_tokenizer.type == "byte" || o.train_tokenizer.type == "char" || o.train_tokenizer.type == "word" ||
               o.train_tokenizer.type == "bpe",
           "config: ", tok.where("type"), ": expected byte, char, word or bpe, got '", o.train_tokenizer.type, "'");
  o.train_tokenizer.vocab_size = tok.get_at_least("vocab_size", o.train_tokenizer.vocab_size, 0);
  o.train_tokenizer.min_freq = tok.get_at_least("min_freq", o.train_tokenizer.min_freq, 1);
  o.train_tokenizer.lowercase = tok.get<bool>("lowercase", o.train_tokenizer.lowercase);
  o.train_tokenizer.split_punctuation = tok.get<bool>("split_punctuation", o.train_tokenizer.split_punctuation);
  tok.finish();
  if (tsv) {
    o.header = s.get<bool>("header", o.header);
    o.max_length = s.get_at_least("max_length", o.max_length, 0);
  } else {
    o.seq_len = s.get_at_least("seq_len", o.seq_len, 2);
  }
  // The resolved section shows the tokenizer with its defaults.
  return o;
}

data::Splits text_set(JsonSection& s, uint64_t) {
  data::DataFiles f = read_files(s);
  return data::text_language_model(f, read_text_options(s, false));
}
data::Splits tsv_classification_set(JsonSection& s, uint64_t) {
  data::DataFiles f = read_files(s);
  data::TextOptions o = read_text_options(s, true);
  if (s.has("classes")) {
    json classes = s.get<json>("classes", json::array());
    KS_CHECK(classes.is_array() && std::all_of(classes.begin(), classes.end(), [](const json& c) { return c.is_string(); }),
             "config: ", s.where("classes"), ": expected a list of strings, got ", nn::json_excerpt(classes));
    o.classes = classes.get<std::vector<std::string>>();
  }
  return data::tsv_classification(f, o);
}
data::Splits tsv_seq2seq_set(JsonSection& s, uint64_t) {
  data::DataFiles f = read_files(s);
  return data::tsv_seq2seq(f, read_text_options(s, true));
}

using Builder = std::function<data::Splits(JsonSection&, uint64_t)>;
const std::map<std::string, Builder>& builders() {
  static const std::map<std::string, Builder> table = {
      {"seq2seq", seq2seq_set},       {"listops", listops_set},         {"brown_lm", brown_lm_set},
      {"brown_genre", brown_genre_set}, {"fashion_mnist", fashion_mnist_set}, {"text", text_set},
      {"tsv_classification", tsv_classification_set}, {"tsv_seq2seq", tsv_seq2seq_set}};
  return table;
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

TrainingData build_data(const json& section, uint64_t run_seed) {
  JsonSection s(section, "data");
  const std::string name = s.get<std::string>("dataset", "");
  auto it = builders().find(name);
  if (it == builders().end()) {
    std::string known;
    for (auto& [k, _] : builders()) known += (known.empty() ? "" : ", ") + k;
    throw Error(str("config: data.dataset: unknown data set '", name, "' (known: ", known, ")"));
  }
  TrainingData out;
  try {
    out.splits = it->second(s, run_seed);
  } catch (const Error& e) {
    const std::string what = e.what();
    throw Error(what.rfind("config: ", 0) == 0 ? what : str("data set '", name, "': ", what));
  } catch (const std::bad_alloc&) {
    throw Error(str("data set '", name, "': out of memory while building it (are the split sizes too large?)"));
  }
  s.finish(str(" for dataset '", name, "'"));
  out.resolved = s.resolved();
  const char* split_names[] = {"train", "valid", "test"};
  const data::Dataset* sets[] = {&out.splits.train, &out.splits.valid, &out.splits.test};
  for (int i = 0; i < 3; ++i) {
    KS_CHECK(sets[i]->size() > 0, "data set '", name, "': the ", split_names[i], " split is empty");
    sets[i]->validate(str("data set '", name, "' ", split_names[i]));
  }
  return out;
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
