// ops/rms_norm.cpp — rms_norm: the forward's entry and the backward's kernel
// call (checks and node shared with layer_norm, ops/norm_common.h); the loops
// are in cpu/rms_norm.cpp and cuda/rms_norm.cu.
#include "ops/rms_norm.h"

#include "autograd/node.h"
#include "ops/elementwise.h"
#include "ops/norm_common.h"
#include "ops/reduce.h"
#include "ops/unary.h"

namespace ks {

constinit KernelTable<RmsNormKernel> rms_norm_kernel("rms_norm");
constinit KernelTable<RmsNormBackwardKernel> rms_norm_backward_kernel("rms_norm_backward");

Tensor rms_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight, const Tensor& bias, double eps) {
  KS_CHECK(x.defined(), "rms_norm: undefined input");
  KS_CHECK(is_floating(x.dtype()), "rms_norm: expected a floating tensor, got ", describe(x));
  const int64_t rows = norm_common::check_args("rms_norm", x, normalized_shape, weight, bias, eps);
  Tensor y = Tensor::empty(x.sizes(), x.dtype(), x.device());
  Tensor rstd = Tensor::empty({rows}, kFloat64, x.device());
  rms_norm_kernel(y.device(), y, rstd, x, weight, bias, eps);

  const Dims dims = norm_common::last_dims(x, int64_t(normalized_shape.size()));
  norm_common::record_backward(
      "RmsNormBackward", x, normalized_shape, weight, bias, y,
      [dims, eps](const Tensor& xi, const Tensor& w, const Tensor& b) {  // x / sqrt(mean(x²) + eps) · w + b
        Tensor yi = div(xi, sqrt(add(mean(mul(xi, xi), dims, true), eps)));
        if (w.defined()) yi = mul(yi, w);
        return b.defined() ? add(yi, b) : yi;
      },
      [srstd = SavedTensor(rstd)](const Tensor& dx, const Tensor& dw, const Tensor& db, const Tensor& gy,
                                  const Tensor& xs, const Tensor& w) {
        rms_norm_backward_kernel(gy.device(), dx, dw, db, gy, xs, srstd.unpack(), w);
      });
  return y;
}

}  // namespace ks
