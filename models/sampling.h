// models/sampling.h — choosing the next token from a row of logits: greedy
// (argmax), or a draw from softmax(logits / temperature) restricted to the
// top_k most likely tokens and then to the nucleus (top_p), with the random
// numbers taken from a Generator so a seeded run is reproducible; and the
// repetition penalty, which reshapes the logits of tokens already seen before
// either choice.
//
// The order is Hugging Face's (generation/logits_process.py): the repetition
// penalty on the raw logits, then temperature, then top-k, then top-p, whose
// mass is measured on the distribution top-k left (renormalised). So a top_p
// cut never brings back a token top_k removed, and greedy decoding sees the
// penalty too.
//
// Not here: decoding loops (DecoderLM::generate), beam search, stop strings
// (models/stop_strings.h).
#pragma once

#include <cstdint>

#include "core/random.h"
#include "core/tensor.h"

namespace ks::models {

struct SamplingOptions {
  bool greedy = true;               // argmax (the first largest logit); temperature, top_k, top_p unused
  double temperature = 1.0;         // > 0; logits are divided by it before the softmax
  int64_t top_k = 0;                // 0: the whole vocabulary; else only the k largest logits (ties: lower id first)
  double top_p = 1.0;               // in (0, 1]; 1: no cut; else the smallest set of most likely tokens (of those
                                    // top_k kept) whose probability sums to >= top_p (Holtzman et al. 2020)
  double repetition_penalty = 1.0;  // > 0; 1: off. Keskar et al. 2019 (CTRL) as HF applies it: the logit x of a
                                    // token already in the row's `seen` ids becomes x / penalty if x > 0, else
                                    // x · penalty — each token once, however often it was seen
  Generator* generator = nullptr;   // nullptr: the global generator (ks::manual_seed)
};

// logits (B, V), floating, any device -> int64 (B) on the logits' device.
// seen: the ids each row already holds (prompt and output so far), int64
// (B, S) on any device; needed only for a repetition_penalty other than 1
// (undefined: nothing seen). One uniform per row is drawn (as rand({B},
// float64)) unless greedy, so top_k = 1 and a top_p small enough to keep one
// token pick the same tokens as greedy whatever the generator's state, and
// top_p = 1 draws exactly what it draws without top_p.
Tensor sample_next(const Tensor& logits, const SamplingOptions& opts, const Tensor& seen = Tensor());

}  // namespace ks::models
