// ops/layer_norm.cpp — layer_norm: the forward's entry and the backward's
// kernel call (checks and node shared with rms_norm, ops/norm_common.h); the
// loops are in cpu/layer_norm.cpp and cuda/layer_norm.cu.
#include "ops/layer_norm.h"

#include "autograd/node.h"
#include "ops/elementwise.h"
#include "ops/norm_common.h"
#include "ops/reduce.h"
#include "ops/unary.h"

namespace ks {

constinit KernelTable<LayerNormKernel> layer_norm_kernel("layer_norm");
constinit KernelTable<LayerNormBackwardKernel> layer_norm_backward_kernel("layer_norm_backward");

Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight, const Tensor& bias,
                  double eps) {
  KS_CHECK(x.defined(), "layer_norm: undefined input");
  KS_CHECK(is_floating(x.dtype()), "layer_norm: expected a floating tensor, got ", describe(x));
  const int64_t rows = norm_common::check_args("layer_norm", x, normalized_shape, weight, bias, eps);
  Tensor y = Tensor::empty(x.sizes(), x.dtype(), x.device());
  Tensor mean = Tensor::empty({rows}, kFloat64, x.device());
  Tensor rstd = Tensor::empty({rows}, kFloat64, x.device());
  layer_norm_kernel(y.device(), y, mean, rstd, x, weight, bias, eps);

  const Dims dims = norm_common::last_dims(x, int64_t(normalized_shape.size()));
  norm_common::record_backward(
      "LayerNormBackward", x, normalized_shape, weight, bias, y,
      [dims, eps](const Tensor& xi, const Tensor& w, const Tensor& b) {  // (x - mean) / sqrt(var + eps) · w + b
        Tensor centred = sub(xi, ks::mean(xi, dims, true));
        Tensor yi = div(centred, sqrt(add(ks::mean(mul(centred, centred), dims, true), eps)));
        if (w.defined()) yi = mul(yi, w);
        return b.defined() ? add(yi, b) : yi;
      },
      [smean = SavedTensor(mean), srstd = SavedTensor(rstd)](const Tensor& dx, const Tensor& dw, const Tensor& db,
                                                             const Tensor& gy, const Tensor& xs, const Tensor& w) {
        layer_norm_backward_kernel(gy.device(), dx, dw, db, gy, xs, smean.unpack(), srstd.unpack(), w);
      });
  return y;
}

}  // namespace ks
