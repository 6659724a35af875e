// ops/norm_common.cpp — the checks and the backward node layer_norm and rms_norm share.
#include "ops/norm_common.h"

#include "autograd/engine.h"
#include "autograd/node.h"
#include "ops/reduce.h"

namespace ks::norm_common {
namespace {

void check_affine(const char* op, const Tensor& p, const char* what, const Tensor& x, const Shape& normalized_shape) {
  if (!p.defined()) return;
  KS_CHECK(p.sizes() == normalized_shape, op, ": ", what, " ", describe(p), " does not match normalized_shape ",
           normalized_shape);
  KS_CHECK(p.dtype() == x.dtype(), op, ": ", what, " ", describe(p), " has a different dtype from input ", describe(x));
  KS_CHECK(p.device() == x.device(), op, ": ", what, " is on ", p.device().str(), " but input is on ",
           x.device().str());
}

}  // namespace

int64_t check_args(const char* op, const Tensor& x, const Shape& normalized_shape, const Tensor& weight,
                   const Tensor& bias, double eps) {
  const int64_t k = int64_t(normalized_shape.size());
  KS_CHECK(k >= 1 && k <= x.dim() && Shape(x.sizes().end() - k, x.sizes().end()) == normalized_shape, op,
           ": normalized_shape ", normalized_shape, " does not match the last dims of input ", describe(x));
  check_affine(op, weight, "weight", x, normalized_shape);
  check_affine(op, bias, "bias", x, normalized_shape);
  KS_CHECK(eps >= 0, op, ": eps must be >= 0, got ", eps);
  return numel_of(Shape(x.sizes().begin(), x.sizes().end() - k));
}

Dims last_dims(const Tensor& x, int64_t k) {
  Dims dims;
  for (int64_t d = x.dim() - k; d < x.dim(); ++d) dims.push_back(d);
  return dims;
}

void record_backward(const char* node, const Tensor& x, const Shape& normalized_shape, const Tensor& weight,
                     const Tensor& bias, const Tensor& y, InOps in_ops, BackwardKernel kernel) {
  if (!needs_grad({x, weight, bias})) return;
  const bool gx = x.requires_grad();
  const bool gw = weight.defined() && weight.requires_grad();
  const bool gb = bias.defined() && bias.requires_grad();
  const int64_t k = int64_t(normalized_shape.size());
  record(
      node, {x, weight, bias}, {y},
      [gx, gw, gb, k, sx = SavedTensor(gx || gw ? x : Tensor()), sw = SavedTensor(weight), sb = SavedTensor(bias),
       normalized_shape, in_ops = std::move(in_ops), kernel = std::move(kernel)](const std::vector<Tensor>& g) {
        const Tensor& gy = g[0];
        if (GradMode::is_enabled()) {  // create_graph
          if (!sx.defined()) {         // only the bias needs a gradient: the sum of gy over the rows
            Dims rows;
            for (int64_t d = 0; d < gy.dim() - k; ++d) rows.push_back(d);
            return std::vector<Tensor>{Tensor(), Tensor(), rows.empty() ? gy : sum(gy, rows)};
          }
          return grad_by_recompute(
              [&](const std::vector<Tensor>& in) { return std::vector<Tensor>{in_ops(in[0], in[1], in[2])}; },
              {sx.unpack(), sw.unpack(), sb.unpack()}, {gy});
        }
        Tensor dx, dw, db;
        if (gx) dx = Tensor::empty(gy.sizes(), gy.dtype(), gy.device());
        if (gw) dw = Tensor::empty(normalized_shape, gy.dtype(), gy.device());
        if (gb) db = Tensor::empty(normalized_shape, gy.dtype(), gy.device());
        kernel(dx, dw, db, gy, sx.unpack(), gx ? sw.unpack() : Tensor());
        return std::vector<Tensor>{dx, dw, db};
      },
      HigherOrder::Supported);
}

}  // namespace ks::norm_common
