// datasets/sets/brown_lm.cpp — the "brown_lm" data set's descriptor: the Brown corpus as a
// word-level language model (datasets/brown.h).
#include "datasets/brown.h"
#include "datasets/sets/common.h"

namespace ks::data::sets {
namespace {

using json = nlohmann::json;

std::vector<KeyDoc> brown_lm_keys() {
  return {{"seq_len", "tokens per example window"},
          {"lowercase", "lowercase the words"},
          {"min_freq", "words seen fewer times in training become <unk>"},
          {"max_vocab", "the most word ids; 0: no limit"},
          {"split_seed", "the seed of the documents' train/valid/test split"},
          {"cache_dir", "where the corpus is kept; empty: $KEYSTONE_DATA or ~/.cache/keystone"}};
}

Splits brown_lm_set(nn::JsonSection& s, DataSetContext& ctx) {
  BrownLMOptions o;
  o.seq_len = s.get_at_least("seq_len", o.seq_len, 2);
  o.lowercase = s.get<bool>("lowercase", o.lowercase);
  o.min_freq = s.get_at_least("min_freq", o.min_freq, 1);
  o.max_vocab = s.get_at_least("max_vocab", o.max_vocab, 0);
  o.split_seed = s.get<uint64_t>("split_seed", o.split_seed);
  fs::path cache = cache_dir(s);
  if (ctx.describe_only) return {};
  return brown_language_model(read_brown(fetch_brown(cache)), o);
}

std::vector<KeyDoc> keys() { return brown_lm_keys(); }

}  // namespace

KS_REGISTER_DATA_SET("brown_lm",
                     DataSetKind{.build = brown_lm_set, .task = Task::LanguageModel, .tokenized = true, .keys = keys},
                     2);

}  // namespace ks::data::sets
