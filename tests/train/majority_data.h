// tests/train/majority_data.h — the toy task the tests of a program's own
// model train on (test_own_model.cpp, test_loss_scaling.cpp): sequences of
// kMajorityLength ids below kMajorityVocab, labelled "high" when most ids lie
// in the upper half of the vocabulary. Seeded by stream, so each split is the
// same in every run. Not a data set users see.
#pragma once

#include <cstdint>

#include "datasets/dataset.h"

namespace ks::testing {

inline constexpr int64_t kMajorityVocab = 8, kMajorityLength = 5;

inline data::Dataset majority_split(int64_t n, uint64_t stream) {
  data::Dataset d;
  d.task = data::Task::Classification;
  d.vocab_size = kMajorityVocab;
  d.classes = {"low", "high"};
  data::Rng rng(7, stream);
  for (int64_t i = 0; i < n; ++i) {
    data::Example e;
    int64_t high = 0;
    for (int64_t t = 0; t < kMajorityLength; ++t) {
      e.tokens.push_back(int32_t(rng.below(kMajorityVocab)));
      high += e.tokens.back() >= kMajorityVocab / 2;
    }
    e.label = 2 * high > kMajorityLength;
    d.examples.push_back(e);
  }
  return d;
}

// Train 256 examples, valid and test 64 each.
inline data::Splits majority_splits() { return {majority_split(256, 0), majority_split(64, 1), majority_split(64, 2)}; }

}  // namespace ks::testing
