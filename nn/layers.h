// nn/layers.h — the basic layers: Linear, Embedding, Dropout.
//
// Each owns its parameters (initialised as PyTorch initialises them) and
// forwards to the fused op in ops/. Shapes: Linear (..., in) -> (..., out);
// Embedding int64 (...) -> (..., dim); Dropout keeps the shape.
// A Linear may carry a LoRA adapter (add_lora; nn/lora.h attaches them by
// module path): y = x Wᵀ + b + (alpha/r) · dropout(x) Aᵀ Bᵀ, with A and B the
// children lora_A (r, in) and lora_B (out, r), so their state-dict names are
// PEFT's (`...q.lora_A.weight`). It lives in Linear itself because every layer
// that owns a Linear (the attention families' q, k, v, o; the feed-forwards)
// calls Linear::forward, so one branch here reaches them all.
// Not here: containers (nn/container.h), the norms (nn/norm.h), Transformer blocks (nn/transformer.h).
#pragma once

#include "nn/module.h"

namespace ks::nn {

class Linear;

// A Linear's low-rank adapter (LoRA, Hu et al. 2021), as PEFT builds it.
struct LoraAdapter {
  std::shared_ptr<Linear> A;  // lora_A: Linear(in, r, no bias), weight (r, in), kaiming-uniform a = √5
  std::shared_ptr<Linear> B;  // lora_B: Linear(r, out, no bias), weight (out, r), zeros: starts as the base
  int64_t rank = 0;
  double alpha = 0;
  double dropout = 0;  // on the adapter's input only, as PEFT's lora_dropout
  double scale() const { return alpha / double(rank); }
};

class Linear : public Module {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias = true);
  Tensor forward(const Tensor& x) const;  // (..., in) -> (..., out)
  // Registers lora_A and lora_B (above) and makes forward add their path.
  // Draws A from the global generator. Once per Linear.
  void add_lora(int64_t rank, double alpha, double dropout);
  Tensor weight;  // (out, in), U(-1/sqrt(in), 1/sqrt(in)); undefined when q8 holds it
  Tensor bias;    // (out,), same bound; undefined when bias = false
  int64_t in_features, out_features;
  std::shared_ptr<LoraAdapter> lora;  // null: a plain Linear
  // The weight as Q8_0 blocks (ops/q8_0.h), registered as "weight", when the
  // Linear was built under nn::Q8WeightScope and in is a multiple of 32
  // (zero until loaded); forward then runs linear_q8_0 (inference only).
  // Null otherwise.
  std::shared_ptr<Q8Matrix> q8;
};

class Embedding : public Module {
 public:
  // padding_idx < 0: none. Otherwise that row starts at zero and gets no gradient.
  Embedding(int64_t num_embeddings, int64_t dim, int64_t padding_idx = -1);
  Tensor forward(const Tensor& indices) const;  // int64 (...) -> (..., dim)
  // The table as a tied output layer: h (..., dim) -> (..., num) = h · weightᵀ,
  // no bias; through linear_q8_0 where q8 holds the table.
  Tensor project(const Tensor& h) const;
  Tensor weight;  // (num, dim), N(0, 1); undefined when q8 holds it
  int64_t num_embeddings, dim, padding_idx;
  // The table as Q8_0 blocks, as Linear's q8 (dim a multiple of 32 under
  // nn::Q8WeightScope); forward dequantizes the rows it looks up.
  std::shared_ptr<Q8Matrix> q8;
};

class Dropout : public Module {
 public:
  explicit Dropout(double p);
  Tensor forward(const Tensor& x) const;  // identity in eval mode or for p = 0
  double p;
};

}  // namespace ks::nn
