// tests/nn/layer_checks.h — the decoder layer's caching check, shared by the
// layer tests (tests/nn/test_layers.cpp: pre and post norm) and the block
// tests (tests/nn/test_blocks.cpp: every norm and feed-forward kind): decoding
// one position at a time from a DecoderLayerCache equals the whole forward.
// Not here: the attention modules' own cache checks (attention_reference.h).
#pragma once

#include <vector>

#include "nn/transformer.h"
#include "support/testing.h"

namespace ks::testing {

// dec over tgt (B, T, d) and the encoder's memory, decoded a position at a
// time from a cache, equals its whole forward (float32 tolerances); returns
// the whole output.
inline Tensor check_decoder_caching(nn::DecoderLayer& dec, const Tensor& tgt, const Tensor& memory) {
  Tensor full = dec.forward(tgt, memory);
  nn::DecoderLayerCache cache;
  std::vector<Tensor> steps;
  for (int64_t t = 0; t < tgt.size(1); ++t)
    steps.push_back(dec.forward(narrow(tgt, 1, t, 1), memory, Tensor(), Tensor(), &cache));
  check_close(cat(steps, 1), full, 1e-5, 1e-4);
  return full;
}

}  // namespace ks::testing
