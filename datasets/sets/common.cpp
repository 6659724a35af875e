// datasets/sets/common.cpp — what the data set descriptors share (common.h).
#include "datasets/sets/common.h"

#include <fstream>
#include <optional>

#include "core/fingerprint.h"
#include "datasets/io.h"
#include "models/config.h"
#include "nn/user_input.h"

namespace ks::data::sets {

using json = nlohmann::json;

std::vector<KeyDoc> generator_keys() {
  return {{"seed", "the generator's seed (default: the run's seed)"},
          {"train_size", "generated training examples"},
          {"valid_size", "generated validation examples"},
          {"test_size", "generated test examples"}};
}

std::vector<KeyDoc> file_keys() {
  return {{"train", "the training file (required)"},
          {"valid", "the validation file; empty: cut from train"},
          {"test", "the test file; empty: cut from train"},
          {"valid_fraction", "the share of train cut for validation when valid is empty"},
          {"test_fraction", "the share of train cut for testing when test is empty"},
          {"split_seed", "the seed of those cuts (holdout random)"},
          {"holdout",
           "which lines are cut: random (drawn by split_seed) | last (the "
           "file's last lines: test at the very end, valid before it)"},
          {"tokenizer", "the tokenizer trained on the training split (its keys below)"}};
}

std::vector<KeyDoc> tsv_keys() {
  return {{"header", "the first line is a header, skipped"},
          {"max_length", "longer lines are cut to this many tokens; 0: kept whole"}};
}

std::vector<KeyDoc> tokenizer_keys() {
  return {{"type", joined(trainable_tokenizer_types(), " | ")},
          {"vocab_size", "the most ids, specials included; 0: no limit (bpe: required, at least 260)"},
          {"min_freq", "char, word: rarer symbols become <unk>; bpe: stop merging below it"},
          {"lowercase", "word: lowercase ASCII letters"},
          {"split_punctuation", "word: each ASCII punctuation mark is a word"},
          {"file",
           "a tokenizer.json used as it is instead of training one: Keystone's, or Hugging Face's with type "
           "hf_bpe; type must be the file's"}};
}

std::vector<KeyDoc> join(std::initializer_list<std::vector<KeyDoc>> tables) {
  std::vector<KeyDoc> out;
  for (const auto& t : tables) out.insert(out.end(), t.begin(), t.end());
  return out;
}

Sizes read_sizes(nn::JsonSection& s, Sizes defaults) {
  return {s.get_between("train_size", defaults.train, 1, kMaxGeneratedExamples),
          s.get_between("valid_size", defaults.valid, 1, kMaxGeneratedExamples),
          s.get_between("test_size", defaults.test, 1, kMaxGeneratedExamples)};
}

fs::path read_path(nn::JsonSection& s, const std::string& key, const std::string& fallback, bool required,
                   bool describe_only) {
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
  return p.empty() ? data_cache_dir() : p;
}

void check_fingerprints(nn::JsonSection& s, const std::vector<std::pair<std::string, fs::path>>& files,
                        DataSetContext& ctx) {
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
      ctx.warnings->push_back(str(s.where(key), ": ", path.string(), " changed since the run recorded it (",
                                  recorded_text(ctx.recorded, key), ", now ", h,
                                  "); its splits are not the ones the run was trained on"));
  }
}

DataFiles read_files(nn::JsonSection& s, DataSetContext& ctx) {
  DataFiles f;
  f.train = read_path(s, "train", "", true, ctx.describe_only);
  f.valid = read_path(s, "valid", "", false);
  f.test = read_path(s, "test", "", false);
  f.valid_fraction = s.get_in("valid_fraction", f.valid_fraction, 0.0, 0.9);
  f.test_fraction = s.get_in("test_fraction", f.test_fraction, 0.0, 0.9);
  f.split_seed = s.get<uint64_t>("split_seed", f.split_seed);
  const std::string holdout = s.get<std::string>("holdout", holdout_name(f.holdout));
  const std::optional<Holdout> h = holdout_of(holdout);
  KS_CHECK(h, "config: ", s.where("holdout"), ": expected random or last, got ", nn::json_excerpt(json(holdout)));
  f.holdout = *h;
  check_fingerprints(s, {{"train", f.train}, {"valid", f.valid}, {"test", f.test}}, ctx);
  return f;
}

TokenizerOptions read_tokenizer_options(nn::JsonSection& s, const std::string& key) {
  TokenizerOptions o;
  json tok_json = s.object(key);
  nn::JsonSection tok(tok_json, s.where(key), tokenizer_keys());
  o.type = tok.get<std::string>("type", o.type);
  KS_CHECK(is_tokenizer_type(o.type), "config: ", tok.where("type"), ": expected ", tokenizer_types(), ", got '",
           o.type, "'");
  o.vocab_size = tok.get_between("vocab_size", o.vocab_size, 0, kMaxVocabSize);  // what load_tokenizer accepts
  o.min_freq = tok.get_at_least("min_freq", o.min_freq, 1);
  o.lowercase = tok.get<bool>("lowercase", o.lowercase);
  o.split_punctuation = tok.get<bool>("split_punctuation", o.split_punctuation);
  if (const fs::path file = read_path(tok, "file", "", false); !file.empty()) {
    o.file = file.string();
    // Set away from its default (a resolved config lists every key at its default).
    const TokenizerOptions d;
    for (const auto& [k, set] :
         {std::pair{"vocab_size", o.vocab_size != d.vocab_size}, std::pair{"min_freq", o.min_freq != d.min_freq},
          std::pair{"lowercase", o.lowercase != d.lowercase},
          std::pair{"split_punctuation", o.split_punctuation != d.split_punctuation}})
      KS_CHECK(!set, "config: ", tok.where(k), " goes with training a tokenizer, not with ", tok.where("file"));
  }
  tok.finish();
  // The resolved section shows the tokenizer with its defaults.
  s.set_resolved(key, tok.resolved());
  s.add_docs(key, tok.docs());
  return o;
}

TextOptions read_text_options(nn::JsonSection& s, DataSetContext& ctx, bool tsv) {
  TextOptions o;
  o.train_tokenizer = read_tokenizer_options(s, "tokenizer");
  if (tsv) {
    o.header = s.get<bool>("header", o.header);
    o.max_length = s.get_between("max_length", o.max_length, 0, models::kMaxLength);
  } else {
    o.seq_len = s.get_between("seq_len", o.seq_len, 2, models::kMaxLength);
  }
  // A run reads its files with the tokenizers it was trained with.
  o.tokenizer = ctx.saved_source;
  return o;
}

}  // namespace ks::data::sets
