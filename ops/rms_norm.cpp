// ops/rms_norm.cpp — rms_norm: argument checks and the backward node; the
// loops are in cpu/rms_norm.cpp and cuda/rms_norm.cu.
#include "ops/rms_norm.h"

#include "autograd/engine.h"
#include "autograd/node.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"
#include "ops/unary.h"

namespace ks {

constinit KernelTable<RmsNormKernel> rms_norm_kernel("rms_norm");
constinit KernelTable<RmsNormBackwardKernel> rms_norm_backward_kernel("rms_norm_backward");

namespace {

void check_affine(const Tensor& p, const char* what, const Tensor& x, const Shape& normalized_shape) {
  if (!p.defined()) return;
  KS_CHECK(p.sizes() == normalized_shape, "rms_norm: ", what, " ", describe(p), " does not match normalized_shape ",
           normalized_shape);
  KS_CHECK(p.dtype() == x.dtype(), "rms_norm: ", what, " ", describe(p), " has a different dtype from input ",
           describe(x));
  KS_CHECK(p.device() == x.device(), "rms_norm: ", what, " is on ", p.device().str(), " but input is on ",
           x.device().str());
}

// The forward in differentiable ops, over the last k dims: how a create_graph
// backward differentiates rms_norm (grad_by_recompute); the kernel is the fast path.
Tensor rms_norm_in_ops(const Tensor& x, int64_t k, const Tensor& weight, const Tensor& bias, double eps) {
  Dims dims;
  for (int64_t d = x.dim() - k; d < x.dim(); ++d) dims.push_back(d);
  Tensor y = div(x, sqrt(add(mean(mul(x, x), dims, true), eps)));
  if (weight.defined()) y = mul(y, weight);
  if (bias.defined()) y = add(y, bias);
  return y;
}

}  // namespace

Tensor rms_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight, const Tensor& bias,
                double eps) {
  KS_CHECK(x.defined(), "rms_norm: undefined input");
  KS_CHECK(x.dtype() == kFloat32 || x.dtype() == kFloat64, "rms_norm: expected a float32 or float64 tensor, got ",
           describe(x));
  const int64_t k = int64_t(normalized_shape.size());
  KS_CHECK(k >= 1 && k <= x.dim() && Shape(x.sizes().end() - k, x.sizes().end()) == normalized_shape,
           "rms_norm: normalized_shape ", normalized_shape, " does not match the last dims of input ", describe(x));
  check_affine(weight, "weight", x, normalized_shape);
  check_affine(bias, "bias", x, normalized_shape);
  KS_CHECK(eps >= 0, "rms_norm: eps must be >= 0, got ", eps);

  const int64_t rows = numel_of(Shape(x.sizes().begin(), x.sizes().end() - k));
  Tensor y = Tensor::empty(x.sizes(), x.dtype(), x.device());
  Tensor rstd = Tensor::empty({rows}, kFloat64, x.device());
  rms_norm_kernel(y.device(), y, rstd, x, weight, bias, eps);

  if (needs_grad({x, weight, bias})) {
    const bool gx = x.requires_grad();
    const bool gw = weight.defined() && weight.requires_grad();
    const bool gb = bias.defined() && bias.requires_grad();
    // x is read for dx and dweight; weight only for dx (and by a create_graph
    // backward's recomputation: parameters, alive anyway).
    record(
        "RmsNormBackward", {x, weight, bias}, {y},
        [gx, gw, gb, k, eps, sx = SavedTensor(gx || gw ? x : Tensor()), sw = SavedTensor(weight),
         sb = SavedTensor(bias), srstd = SavedTensor(rstd), normalized_shape](const std::vector<Tensor>& g) {
          const Tensor& gy = g[0];
          if (GradMode::is_enabled()) {  // create_graph
            if (!sx.defined()) {         // only the bias needs a gradient: the sum of gy over the rows
              Dims rows;
              for (int64_t d = 0; d < gy.dim() - k; ++d) rows.push_back(d);
              return std::vector<Tensor>{Tensor(), Tensor(), rows.empty() ? gy : sum(gy, rows)};
            }
            return grad_by_recompute(
                [&](const std::vector<Tensor>& in) {
                  return std::vector<Tensor>{rms_norm_in_ops(in[0], k, in[1], in[2], eps)};
                },
                {sx.unpack(), sw.unpack(), sb.unpack()}, {gy});
          }
          Tensor dx, dw, db;
          if (gx) dx = Tensor::empty(gy.sizes(), gy.dtype(), gy.device());
          if (gw) dw = Tensor::empty(normalized_shape, gy.dtype(), gy.device());
          if (gb) db = Tensor::empty(normalized_shape, gy.dtype(), gy.device());
          rms_norm_backward_kernel(gy.device(), dx, dw, db, gy, sx.unpack(), srstd.unpack(),
                                   gx ? sw.unpack() : Tensor());
          return std::vector<Tensor>{dx, dw, db};
        },
        HigherOrder::Supported);
  }
  return y;
}

}  // namespace ks
