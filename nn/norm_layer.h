// nn/norm_layer.h — LayerNorm (Ba et al.): y = (x − mean) / √(var + eps) · weight + bias
// over the last dim, the fused ops/layer_norm.h; registered as the norm kind
// "layernorm" (nn/norm.h), the default of every model.
// Not here: the registry (nn/norm.h), RMSNorm (nn/norm_rms.h).
#pragma once

#include "nn/norm.h"

namespace ks::nn {

class LayerNorm : public Norm {
 public:
  // affine: a gain (ones); bias: and a shift (zeros), with affine only.
  explicit LayerNorm(int64_t dim, double eps = 1e-5, bool affine = true, bool bias = true);
  Tensor forward(const Tensor& x) const override;  // normalises the last dim
  Tensor weight, bias;                             // (dim,); undefined without affine / bias
  int64_t dim;
  double eps;
};

}  // namespace ks::nn
