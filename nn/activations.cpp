// nn/activations.cpp — the built-in feed-forward activations as registered
// descriptors (nn/feed_forward.h ActivationKind): "gelu" (the exact erf form),
// "relu", "gelu_tanh" (GPT-2's tanh approximation). A plugin adds one with
// KS_REGISTER_ACTIVATION; the ops themselves are ops/unary.h's.
#include "nn/feed_forward.h"
#include "ops/unary.h"

namespace ks::nn {
namespace {

Tensor apply_gelu(const Tensor& x) { return gelu(x); }
Tensor apply_relu(const Tensor& x) { return relu(x); }
Tensor apply_gelu_tanh(const Tensor& x) { return gelu(x, GeluApprox::Tanh); }

}  // namespace

KS_REGISTER_ACTIVATION("gelu", ActivationKind{apply_gelu}, 0);
KS_REGISTER_ACTIVATION("relu", ActivationKind{apply_relu}, 1);
KS_REGISTER_ACTIVATION("gelu_tanh", ActivationKind{apply_gelu_tanh}, 2);

}  // namespace ks::nn
