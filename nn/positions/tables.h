// nn/positions/tables.h — the position tables added to the embeddings: the
// sinusoidal encoding of Vaswani et al. and a learned table. The position
// kinds "sinusoidal" and "learned" (sinusoidal.cpp, learned.cpp beside this
// file) build them; models read them through the kind (positions.h). Not
// here: positions applied inside attention (rope.cpp, alibi.cpp).
#pragma once

#include <cstdint>

#include "nn/module.h"

namespace ks::nn {

// PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(...): a (max_len, d) buffer.
class SinusoidalPositions : public Module {
 public:
  SinusoidalPositions(int64_t max_len, int64_t d_model);
  // (B, T, d) -> x + PE[offset : offset + T]; offset is the first position (for cached decoding).
  Tensor forward(const Tensor& x, int64_t offset = 0) const;
  Tensor table;
  int64_t max_len;
};

// A learned (max_len, d) table, N(0, 1) like nn.Embedding.
class LearnedPositions : public Module {
 public:
  LearnedPositions(int64_t max_len, int64_t d_model);
  Tensor forward(const Tensor& x, int64_t offset = 0) const;
  Tensor weight;
  int64_t max_len;
};

}  // namespace ks::nn
