// nn/norm_layer.cpp — LayerNorm and its registration as the norm kind "layernorm".
#include "nn/norm_layer.h"

#include "core/factory.h"
#include "ops/layer_norm.h"

namespace ks::nn {

LayerNorm::LayerNorm(int64_t d, double e, bool affine, bool with_bias) : Norm("LayerNorm"), dim(d), eps(e) {
  KS_CHECK(d > 0, "LayerNorm: dim must be positive, got ", d);
  if (affine) {
    weight = register_parameter("weight", ones({d}));
    if (with_bias) bias = register_parameter("bias", zeros({d}));
  }
}

Tensor LayerNorm::forward(const Tensor& x) const { return layer_norm(x, {dim}, weight, bias, eps); }

namespace {
std::shared_ptr<Norm> make(int64_t dim, const NormConfig& cfg) {
  return std::make_shared<LayerNorm>(dim, cfg.eps, /*affine=*/true, cfg.bias);
}
int64_t params(int64_t dim, bool bias) { return bias ? 2 * dim : dim; }
}  // namespace

KS_REGISTER_NORM("layernorm",
                 {.doc = "LayerNorm: (x - mean) / sqrt(var + eps) * g (+ b)", .make = make, .params = params});

}  // namespace ks::nn
