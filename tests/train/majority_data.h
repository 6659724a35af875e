// tests/train/majority_data.h — the toy task the tests of a program's own
// model train on (test_own_model.cpp, test_loss_scaling.cpp): sequences of
// kMajorityLength ids below kMajorityVocab, labelled "high" when most ids lie
// in the upper half of the vocabulary (seeded by stream, so each split is the
// same in every run), and the small model that learns it. Not a data set users see.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "datasets/dataset.h"
#include "models/model.h"
#include "nn/layers.h"
#include "ops/reduce.h"

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

// Is the sequence mostly "high" ids? Embedding, mean over positions, dropout,
// linear: the mean of the embeddings counts the high ids, so the task is
// learnable, and dropout makes an exact resume depend on its stream. `name`
// is what the run folder records as the program's model.
class MajorityClassifier : public models::Model {
 public:
  explicit MajorityClassifier(int64_t width, const std::string& name = "MajorityClassifier")
      : Model(models::ModelConfig{}, name) {
    embed = register_module("embed", std::make_shared<nn::Embedding>(kMajorityVocab, width));
    drop = register_module("drop", std::make_shared<nn::Dropout>(0.1));
    head = register_module("head", std::make_shared<nn::Linear>(width, 2));
  }
  models::ModelCost cost(int64_t) const override { return {.params = num_parameters()}; }
  // tokens (B, T) -> logits (B, 2) against labels (B).
  models::Predictions predict(const models::Batch& b) override {
    return {head->forward(drop->forward(mean(embed->forward(b.tokens), {1}))), b.labels};
  }
  std::shared_ptr<nn::Embedding> embed;
  std::shared_ptr<nn::Dropout> drop;
  std::shared_ptr<nn::Linear> head;
};

}  // namespace ks::testing
