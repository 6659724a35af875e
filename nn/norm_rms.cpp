// nn/norm_rms.cpp — RMSNorm and its registration as the norm kind "rmsnorm".
#include "nn/norm_rms.h"

#include "core/factory.h"
#include "ops/rms_norm.h"

namespace ks::nn {

RMSNorm::RMSNorm(int64_t d, double e, bool with_bias) : Norm("RMSNorm"), dim(d), eps(e) {
  KS_CHECK(d > 0, "RMSNorm: dim must be positive, got ", d);
  weight = register_parameter("weight", ones({d}));
  if (with_bias) bias = register_parameter("bias", zeros({d}));
}

Tensor RMSNorm::forward(const Tensor& x) const { return rms_norm(x, {dim}, weight, bias, eps); }

namespace {
std::shared_ptr<Norm> make(int64_t dim, const NormConfig& cfg) {
  return std::make_shared<RMSNorm>(dim, cfg.eps, cfg.bias);
}
int64_t params(int64_t dim, bool bias) { return bias ? 2 * dim : dim; }
}  // namespace

KS_REGISTER_NORM("rmsnorm", {.doc = "RMSNorm: x / sqrt(mean(x^2) + eps) * g (+ b)", .make = make, .params = params});

}  // namespace ks::nn
