// nn/feed_forward.h — the Transformer's position-wise feed-forward block as
// descriptors, and the activations it applies (by registered name).
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

#include "core/registry.h"  // KS_CONCAT
#include "nn/layers.h"

namespace ks::nn {

// An activation by its registered name: "gelu" (the exact erf form),
// "gelu_tanh" (its tanh approximation, GPT-2's "gelu_new"), "relu"
// (nn/activations.cpp), or one a plugin registers (KS_REGISTER_ACTIVATION).
using Activation = std::string;
struct ActivationKind {
  Tensor (*apply)(const Tensor& x) = nullptr;  // elementwise, differentiable
};
// `order` places it where errors list the names.
bool register_activation(const std::string& name, ActivationKind kind, int order = 0);
std::vector<std::string> activation_names();  // "gelu", "relu", "gelu_tanh", then a plugin's
// The name, checked: throws "unknown activation 'x' (expected gelu, relu or gelu_tanh)".
Activation parse_activation(const std::string& name);
inline const std::string& activation_name(const Activation& a) { return a; }
Tensor activate(const Activation& a, const Tensor& x);

// What a feed-forward block is built from; the same for every kind.
struct FeedForwardConfig {
  int64_t d_model = 0;
  int64_t d_ff = 0;                // the hidden width, resolved (FeedForwardKind::hidden)
  Activation activation = "gelu";  // mlp's; a gated kind has its own
  double dropout = 0.0;            // on the hidden activations
  bool bias = true;                // biases in its linears
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

}  // namespace ks::nn

#define KS_REGISTER_FEED_FORWARD(name, ...)                            \
  static const bool KS_CONCAT(ks_feed_forward_registered_, __LINE__) = \
      ::ks::nn::register_feed_forward(name, __VA_ARGS__)

#define KS_REGISTER_ACTIVATION(name, ...) \
  static const bool KS_CONCAT(ks_activation_registered_, __LINE__) = ::ks::nn::register_activation(name, __VA_ARGS__)
