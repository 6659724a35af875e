// tests/support/tiny_models.h — the small, dropout-free model configs and the
// seeded builds that the model, CUDA and tools suites train and compare.
// Not here: data or batches (each suite's own), the model code (models/).
// Its own header (not support/testing.h) because models/ brings in the JSON
// library, which the suites below models/ do not compile.
#pragma once

#include <doctest/doctest.h>

#include <memory>
#include <string>

#include "core/random.h"
#include "models/model.h"

namespace ks::testing {

// `model` over `vocab` tokens: width d (d_ff = 2d), `layers` layers of `heads`
// attention heads over d, positions up to max_len, no dropout. Callers set
// what else their model kind needs (classes, pooling, attention family).
inline models::ModelConfig tiny_model_config(const std::string& model, int64_t vocab, int64_t d, int64_t layers,
                                             int64_t max_len, int64_t heads) {
  models::ModelConfig c;
  c.model = model;
  c.vocab_size = vocab;
  c.d_model = d;
  c.d_ff = 2 * d;
  c.layers = layers;
  c.max_len = max_len;
  c.dropout = 0;
  c.attention.heads = heads;
  c.attention.d_model = d;
  return c;
}

// models::build_model(c) after manual_seed(seed), as the concrete model type M
// (the test fails if c builds another kind).
template <class M> std::shared_ptr<M> seeded_model(const models::ModelConfig& c, uint64_t seed) {
  manual_seed(seed);
  auto m = std::dynamic_pointer_cast<M>(models::build_model(c));
  REQUIRE(m != nullptr);
  return m;
}

}  // namespace ks::testing
