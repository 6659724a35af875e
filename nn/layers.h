// nn/layers.h — the basic layers: Linear, Embedding, Dropout.
//
// Each owns its parameters (initialised as PyTorch initialises them) and
// forwards to the fused op in ops/. Shapes: Linear (..., in) -> (..., out);
// Embedding int64 (...) -> (..., dim); Dropout keeps the shape.
// Not here: containers (nn/container.h), the norms (nn/norm.h), Transformer blocks (nn/transformer.h).
#pragma once

#include "nn/module.h"

namespace ks::nn {

class Linear : public Module {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias = true);
  Tensor forward(const Tensor& x) const;  // (..., in) -> (..., out)
  Tensor weight;                          // (out, in), U(-1/sqrt(in), 1/sqrt(in))
  Tensor bias;                            // (out,), same bound; undefined when bias = false
  int64_t in_features, out_features;
};

class Embedding : public Module {
 public:
  // padding_idx < 0: none. Otherwise that row starts at zero and gets no gradient.
  Embedding(int64_t num_embeddings, int64_t dim, int64_t padding_idx = -1);
  Tensor forward(const Tensor& indices) const;  // int64 (...) -> (..., dim)
  Tensor weight;                                // (num, dim), N(0, 1)
  int64_t num_embeddings, dim, padding_idx;
};

class Dropout : public Module {
 public:
  explicit Dropout(double p);
  Tensor forward(const Tensor& x) const;  // identity in eval mode or for p = 0
  double p;
};

}  // namespace ks::nn
