// nn/feed_forward.h — the Transformer's position-wise feed-forward block,
// Linear(d, d_ff) -> activation -> Dropout -> Linear(d_ff, d), and the
// positional encodings (sinusoidal, as in Vaswani et al., or learned).
#pragma once

#include <memory>
#include <string>

#include "nn/layers.h"

namespace ks::nn {

// gelu: the exact erf form; gelu_tanh: its tanh approximation (GPT-2's "gelu_new").
enum class Activation { GELU, ReLU, GELUTanh };
Activation parse_activation(const std::string& name);  // "gelu" | "relu" | "gelu_tanh"
const char* activation_name(Activation a);             // parse_activation's inverse
Tensor activate(Activation a, const Tensor& x);

class FeedForward : public Module {
 public:
  FeedForward(int64_t d_model, int64_t d_ff, Activation act = Activation::GELU, double dropout = 0.0);
  Tensor forward(const Tensor& x) const;  // (..., d) -> (..., d)
  std::shared_ptr<Linear> fc1, fc2;
  std::shared_ptr<Dropout> drop;
  Activation activation;
};

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
