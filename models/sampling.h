// models/sampling.h — choosing the next token from a row of logits: greedy
// (argmax), or a draw from softmax(logits / temperature) restricted to the
// top_k most likely tokens, with the random numbers taken from a Generator so
// a seeded run is reproducible.
//
// Not here: decoding loops (DecoderLM::generate), beam search.
#pragma once

#include <cstdint>

#include "core/random.h"
#include "core/tensor.h"

namespace ks::models {

struct SamplingOptions {
  bool greedy = true;              // argmax (the first largest logit); temperature and top_k unused
  double temperature = 1.0;        // > 0; logits are divided by it before the softmax
  int64_t top_k = 0;               // 0: the whole vocabulary; else only the k largest logits (ties: lower id first)
  Generator* generator = nullptr;  // nullptr: the global generator (ks::manual_seed)
};

// logits (B, V), floating, any device -> int64 (B) on the logits' device.
// One uniform per row is drawn (as rand({B}, float64)) unless greedy, so
// top_k = 1 picks the same tokens as greedy whatever the generator's state.
Tensor sample_next(const Tensor& logits, const SamplingOptions& opts);

}  // namespace ks::models
