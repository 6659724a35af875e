// nn/feed_forward.h — the Transformer's position-wise feed-forward block as
// descriptors, and the positional encodings (sinusoidal, as in Vaswani et
// al., or learned).
//
// A feed-forward kind (model.ff) registers itself from its own file
// (KS_REGISTER_FEED_FORWARD): "mlp" (nn/ff_mlp.*: Linear(d, d_ff) -> activation
// -> Dropout -> Linear(d_ff, d)), "swiglu" and "geglu" (nn/ff_gated.*: Llama's
// gated form down(act(gate(x)) · up(x))). Each kind says its hidden width for a
// configured d_ff (0: the kind's default rule), its parameter count and its
// FLOPs, so layers, models and `keystone info` name no kind.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/dispatch.h"  // KS_CONCAT
#include "nn/layers.h"

namespace ks::nn {

// gelu: the exact erf form; gelu_tanh: its tanh approximation (GPT-2's "gelu_new").
enum class Activation { GELU, ReLU, GELUTanh };
Activation parse_activation(const std::string& name);  // "gelu" | "relu" | "gelu_tanh"
const char* activation_name(Activation a);             // parse_activation's inverse
Tensor activate(Activation a, const Tensor& x);

// What a feed-forward block is built from; the same for every kind.
struct FeedForwardConfig {
  int64_t d_model = 0;
  int64_t d_ff = 0;                          // the hidden width, resolved (FeedForwardKind::hidden)
  Activation activation = Activation::GELU;  // mlp's; a gated kind has its own
  double dropout = 0.0;                      // on the hidden activations
  bool bias = true;                          // biases in its linears
};

// (..., d) -> (..., d).
class FeedForward : public Module {
 public:
  using Module::Module;
  virtual Tensor forward(const Tensor& x) const = 0;
};

struct FeedForwardKind {
  std::string doc;  // one line, for the config key's meaning
  std::shared_ptr<FeedForward> (*make)(const FeedForwardConfig& cfg);
  // The hidden width for a configured d_ff: d_ff itself when > 0, else the kind's default rule.
  int64_t (*hidden)(int64_t d_model, int64_t d_ff);
  int64_t (*params)(const FeedForwardConfig& cfg);
  double (*flops_per_token)(const FeedForwardConfig& cfg);  // 2 per multiply-add of its GEMMs
};

bool register_feed_forward(const std::string& name, FeedForwardKind kind);
// The kind named `name`; else throws "unknown feed-forward 'x' (expected geglu, mlp or swiglu)".
const FeedForwardKind& feed_forward_kind(const std::string& name);
std::vector<std::string> feed_forward_kinds();  // sorted
std::shared_ptr<FeedForward> make_feed_forward(const std::string& name, const FeedForwardConfig& cfg);

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

#define KS_REGISTER_FEED_FORWARD(name, ...)                            \
  static const bool KS_CONCAT(ks_feed_forward_registered_, __LINE__) = \
      ::ks::nn::register_feed_forward(name, __VA_ARGS__)
