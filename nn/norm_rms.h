// nn/norm_rms.h — RMSNorm (Zhang & Sennrich; Llama): y = x / √(mean(x²) + eps) · weight (+ bias)
// over the last dim, the fused ops/rms_norm.h; registered as the norm kind
// "rmsnorm" (nn/norm.h). Llama's has no bias (model.bias false).
// Not here: the registry (nn/norm.h), LayerNorm (nn/norm_layer.h).
#pragma once

#include "nn/norm.h"

namespace ks::nn {

class RMSNorm : public Norm {
 public:
  explicit RMSNorm(int64_t dim, double eps = 1e-6, bool bias = false);
  Tensor forward(const Tensor& x) const override;  // normalises the last dim
  Tensor weight, bias;                             // (dim,): ones; zeros, undefined without bias
  int64_t dim;
  double eps;
};

}  // namespace ks::nn
