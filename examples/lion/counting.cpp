// examples/lion/counting.cpp — the plugin's data set "counting": a language
// model over generated counting sequences ("q r s t u ..." as bytes, each
// example counting up from a seeded start), registered with
// KS_REGISTER_DATA_SET so that a config can say
//
//   "data": {"dataset": "counting", "length": 32, "examples": 512}
//
// and `keystone config --defaults` shows its keys. It shows a data set added
// from outside the tree: its keys, defaults and checks beside its code, the
// splits it builds, the byte tokenizer a resumed run gets back from its run
// folder. Not here: the built-in data sets (datasets/sets/), the mechanism
// (datasets/data_set_kind.h).
#include <memory>

#include "datasets/data_set_kind.h"

namespace {

using namespace ks;

// n examples of `len` next-token pairs, counting up (mod 256) from a start
// drawn from the Philox stream (seed, stream): train, valid and test differ
// by stream.
data::Dataset counting(int64_t n, int64_t len, uint64_t seed, uint64_t stream,
                       const std::shared_ptr<const data::Tokenizer>& tok) {
  data::Dataset d;
  d.task = data::Task::LanguageModel;
  d.vocab_size = d.target_vocab_size = tok->vocab_size();
  d.tokenizer = tok;
  data::Rng rng(seed, stream);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t start = rng.below(256);
    data::Ids ids;  // (len + 1)
    for (int64_t t = 0; t <= len; ++t) ids.push_back(int32_t(data::kNumSpecial + (start + t) % 256));
    data::Example e;
    e.tokens.assign(ids.begin(), ids.end() - 1);  // (len)
    e.target.assign(ids.begin() + 1, ids.end());  // (len): the next byte
    d.examples.push_back(std::move(e));
  }
  return d;
}

data::Splits build_counting(nn::JsonSection& s, data::DataSetContext& ctx) {
  const int64_t len = s.get_between("length", 32, 2, 4096);
  const int64_t n = s.get_between("examples", 512, 1, 1 << 20);
  const uint64_t seed = s.get<uint64_t>("seed", ctx.run_seed);
  if (ctx.describe_only) return {};
  // A resumed run reads with the tokenizer it saved; a new one gets bytes.
  std::shared_ptr<const data::Tokenizer> tok =
      ctx.saved_source ? ctx.saved_source : std::make_shared<const data::ByteTokenizer>();
  return {counting(n, len, seed, 0, tok), counting(64, len, seed, 1, tok), counting(64, len, seed, 2, tok)};
}

std::vector<KeyDoc> counting_keys() {
  return {{"length", "tokens per example"},
          {"examples", "training examples (valid and test have 64 each)"},
          {"seed", "the generator's seed (default: the run's seed)"}};
}

KS_REGISTER_DATA_SET("counting", data::DataSetKind{.build = build_counting,
                                                   .task = data::Task::LanguageModel,
                                                   .tokenized = true,
                                                   .keys = counting_keys});

}  // namespace
