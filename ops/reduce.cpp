// ops/reduce.cpp — reduction ops: checks, output shapes, backward formulas.
// The loops are in cpu/reduce.cpp. A plain backward uses broadcast views
// (expand) of the reduced results and gradients, plus the elementwise pieces
// of ReduceGradOps (reduce_grad_formulas.h); under create_graph (grad mode on
// in backward) a piece that multiplies the incoming gradient is restated in
// differentiable ops, so every reduction supports higher-order gradients.
#include "ops/reduce.h"

#include <cmath>

#include "autograd/node.h"
#include "core/factory.h"
#include "ops/compare.h"
#include "ops/elementwise.h"
#include "ops/indexing.h"
#include "ops/reduce_grad_formulas.h"
#include "ops/unary.h"
#include "ops/view.h"

namespace ks {

constinit KernelTable<ReduceKernel> reduce_kernel("reduce");

std::vector<bool> reduction_mask(const Dims& dims, int64_t ndim, const char* op) {
  std::vector<bool> mask(size_t(ndim), dims.empty());
  for (int64_t d : dims) {
    int64_t w = wrap_dim(d, ndim, op);
    if (ndim == 0) continue;
    KS_CHECK(!mask[size_t(w)], op, ": dim ", d, " appears more than once in ", dims);
    mask[size_t(w)] = true;
  }
  return mask;
}

Shape reduced_shape(const Shape& sizes, const std::vector<bool>& mask, bool keepdim) {
  Shape out;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (!mask[d])
      out.push_back(sizes[d]);
    else if (keepdim)
      out.push_back(1);
  }
  return out;
}

namespace {

// The geometry of one reduction of x.
struct Plan {
  std::vector<bool> mask;
  Dims dims;      // the reduced dims, non-negative, ascending
  Shape in;       // x's shape
  Shape kept;     // x's rank with 1 at reduced dims: what the kernel writes
  Shape result;   // kept, or without the reduced dims unless keepdim
  int64_t n = 0;  // elements per reduction
};

Plan make_plan(const Tensor& x, const Dims& dims, bool keepdim, const char* op) {
  KS_CHECK(x.defined(), op, ": undefined input");
  Plan p;
  p.mask = reduction_mask(dims, x.dim(), op);
  p.in = x.sizes();
  p.kept = reduced_shape(p.in, p.mask, true);
  p.result = reduced_shape(p.in, p.mask, keepdim);
  p.n = 1;
  for (int64_t d = 0; d < x.dim(); ++d)
    if (p.mask[size_t(d)]) {
      p.dims.push_back(d);
      p.n *= p.in[size_t(d)];
    }
  return p;
}

// allow_half: bfloat16 and float16 too (run() says how).
void check_dtype(const Tensor& x, const char* op, bool allow_int, bool allow_bool, bool allow_half = false) {
  const DType t = x.dtype();
  bool ok = t == kFloat32 || t == kFloat64 || (allow_int && (t == kInt32 || t == kInt64)) ||
            (allow_bool && t == kBool) || (allow_half && is_16bit(t));
  const char* half = allow_half ? "bfloat16, float16, " : "";
  KS_CHECK(ok, op, ": expected a ",
           allow_bool   ? str("float32, float64, ", half, "int32, int64 or bool")
           : allow_int  ? str("float32, float64, ", half, "int32 or int64")
           : allow_half ? std::string("float32, float64, bfloat16 or float16")
                        : std::string("float32 or float64"),
           " tensor, got ", describe(x));
}

void check_nonempty(const Tensor& x, const Plan& p, const char* op) {
  KS_CHECK(p.n > 0 || numel_of(p.kept) == 0, op, ": cannot reduce over a zero-size dim of ", describe(x),
           " (the result would have no value)");
}

// The reduction `op` of x into a fresh (kept-shape) result and, with_indices, int64 indices.
// A 16-bit x reduces through a float32 copy, its result rounded once, except
// for sum and mean, whose kernels read 16-bit values themselves.
std::pair<Tensor, Tensor> run(ReduceOp op, const Tensor& x, const Plan& p, DType out_dtype, bool with_indices,
                              ReduceParams params = {}) {
  if (is_16bit(x.dtype()) && op != ReduceOp::Sum && op != ReduceOp::Mean) {
    auto [out, idx] =
        run(op, to_raw(x, x.device(), kFloat32), p, is_16bit(out_dtype) ? kFloat32 : out_dtype, with_indices, params);
    return {to_raw(out, out.device(), out_dtype), idx};
  }
  Tensor out = Tensor::empty(p.kept, out_dtype, x.device());
  Tensor idx = with_indices ? Tensor::empty(p.kept, kInt64, x.device()) : Tensor();
  reduce_kernel(x.device(), op, out, idx, x, p.mask, params);
  return {out, idx};
}

// A kernel result (kept shape, fresh) as the user sees it.
Tensor present(const Tensor& t, const Plan& p) {
  return p.result == p.kept ? t : t.alias(p.result, contiguous_strides(p.result), t.storage_offset());
}

// A reduced-shape tensor (result or kept shape) broadcast back over the input.
Tensor spread(const Tensor& t, const Plan& p) { return expand(reshape(t, p.kept), p.in); }

// The piece Op of ReduceGradOps over inputs `in`, into a new tensor of `shape`.
// 16-bit: through float32 copies of the 16-bit inputs, the result rounded once.
template <class Op>
Tensor grad_op(const Shape& shape, DType dtype, Device device, const std::vector<Tensor>& in, double p = 0) {
  if (is_16bit(dtype)) {
    std::vector<Tensor> wide;
    for (const Tensor& t : in) wide.push_back(t.defined() && is_16bit(t.dtype()) ? to_raw(t, device, kFloat32) : t);
    return to_raw(grad_op<Op>(shape, kFloat32, device, wide, p), device, dtype);
  }
  Tensor out = Tensor::empty(shape, dtype, device);
  reduce_grad_kernel<Op>(device, out, in, p);
  return out;
}

DType sum_dtype(DType t) { return is_floating(t) ? t : kInt64; }

// a / b, 0 where b == 0, in differentiable ops (create_graph): b is replaced
// by 1 there before dividing, so no derivative of the result is NaN.
Tensor safe_div(const Tensor& a, const Tensor& b) {
  Tensor zero = eq(b, 0.0);
  return masked_fill(div(a, masked_fill(b, zero, 1.0)), zero, 0.0);
}

// For every element of x, the product of the other elements of its slice
// (create_graph's prod backward), in differentiable ops. Without a zero in x
// it is y / x; with zeros, each element's slice with itself replaced by 1 is
// multiplied out — n² values per slice of n, paid only by a create_graph
// backward through zeros, and exact to every order.
Tensor product_of_others(const Tensor& x, const Tensor& y, const Plan& p) {
  if (sum(eq(x, 0.0)).item<int64_t>() == 0) return div(spread(y, p), x);
  // x's kept dims first, its reduced dims flattened last: rows (..., n).
  Dims perm, inverse(p.in.size());
  Shape rows, permuted;
  for (int64_t d = 0; d < int64_t(p.in.size()); ++d)
    if (!p.mask[size_t(d)]) perm.push_back(d);
  for (int64_t d : perm) rows.push_back(p.in[size_t(d)]);
  perm.insert(perm.end(), p.dims.begin(), p.dims.end());
  for (size_t i = 0; i < perm.size(); ++i) {
    inverse[size_t(perm[i])] = int64_t(i);
    permuted.push_back(p.in[size_t(perm[i])]);
  }
  rows.push_back(p.n);
  Shape square = rows;
  square.push_back(p.n);
  Tensor pos = arange(double(p.n), {.device = x.device()});
  Tensor diagonal = eq(unsqueeze(pos, 1), unsqueeze(pos, 0));  // (n, n)
  Tensor one = ones({}, {.dtype = x.dtype(), .device = x.device()});
  // Row i of each slice: the slice with element i replaced by 1.
  Tensor others = where(diagonal, one, expand(unsqueeze(reshape(permute(x, perm), rows), -2), square));
  return permute(reshape(prod(others, {-1}), permuted), inverse);
}

// amax/amin/max()/min(): values with the gradient split among ties.
Tensor extreme(const Tensor& x, const Dims& dims, bool keepdim, bool is_max, const char* op) {
  Plan p = make_plan(x, dims, keepdim, op);
  check_dtype(x, op, true, false, /*allow_half=*/true);
  check_nonempty(x, p, op);
  Tensor y = run(is_max ? ReduceOp::Max : ReduceOp::Min, x, p, x.dtype(), false).first;
  Tensor out = present(y, p);
  if (needs_grad({x}))
    record(
        is_max ? "AmaxBackward" : "AminBackward", {x}, {out},
        [p, sx = SavedTensor(x), sy = SavedTensor(y)](const std::vector<Tensor>& g) {
          Tensor x = sx.unpack();
          Tensor tie = grad_op<reduce_grad_ops::TieMask>(p.in, x.dtype(), x.device(), {x, spread(sy.unpack(), p)});
          Tensor share = div(reshape(g[0], p.kept), sum(tie, p.dims, true));
          return std::vector<Tensor>{mul(tie, share)};  // in ops: create_graph differentiates the share
        },
        HigherOrder::Supported);
  return out;
}

// max/min/argmax/argmin along one dim: (values, indices) in the kept shape.
std::pair<Tensor, Tensor> along(const Tensor& x, const Plan& p, bool is_max, const char* op) {
  check_dtype(x, op, true, false, /*allow_half=*/true);
  check_nonempty(x, p, op);
  return run(is_max ? ReduceOp::ArgMax : ReduceOp::ArgMin, x, p, x.dtype(), true);
}

ValuesIndices select_along(const Tensor& x, int64_t dim, bool keepdim, bool is_max, const char* op) {
  KS_CHECK(x.defined(), op, ": undefined input");
  Plan p = make_plan(x, {dim}, keepdim, op);
  auto [y, idx] = along(x, p, is_max, op);
  ValuesIndices r{present(y, p), present(idx, p)};
  if (needs_grad({x}))
    record(
        is_max ? "MaxBackward" : "MinBackward", {x}, {r.values},
        [p, si = SavedTensor(idx)](const std::vector<Tensor>& g) {
          if (GradMode::is_enabled()) {  // create_graph: g added at the index, in ops
            if (p.dims.empty()) return std::vector<Tensor>{reshape(g[0], p.in)};  // a 0-d x
            Tensor gx = zeros(p.in, {.dtype = g[0].dtype(), .device = g[0].device()});
            return std::vector<Tensor>{scatter_add(gx, p.dims[0], si.unpack(), reshape(g[0], p.kept))};
          }
          // pos: each element's index along the reduced dim, broadcast over the input.
          Shape pos_shape(p.in.size(), 1);
          if (!p.dims.empty()) pos_shape[size_t(p.dims[0])] = p.n;
          Tensor pos =
              expand(reshape(arange(double(p.n), {.dtype = kInt64, .device = g[0].device()}), pos_shape), p.in);
          return std::vector<Tensor>{grad_op<reduce_grad_ops::SelectGrad>(
              p.in, g[0].dtype(), g[0].device(), {pos, spread(si.unpack(), p), spread(g[0], p)})};
        },
        HigherOrder::Supported);
  return r;
}

Tensor arg_along(const Tensor& x, const Dims& dims, bool keepdim, bool is_max, const char* op) {
  Plan p = make_plan(x, dims, keepdim, op);
  return present(along(x, p, is_max, op).second, p);
}

// var and stddev share their forward and most of their backward.
Tensor variance(const Tensor& x, const Dims& dims, double correction, bool keepdim, bool take_sqrt) {
  const char* op = take_sqrt ? "stddev" : "var";
  Plan p = make_plan(x, dims, keepdim, op);
  check_dtype(x, op, false, false, /*allow_half=*/true);
  KS_CHECK(std::isfinite(correction), op, ": correction must be finite, got ", correction);
  Tensor y = run(take_sqrt ? ReduceOp::Std : ReduceOp::Var, x, p, x.dtype(), false, {.correction = correction}).first;
  Tensor out = present(y, p);
  if (needs_grad({x}))
    record(
        take_sqrt ? "StdBackward" : "VarBackward", {x}, {out},
        [p, correction, sx = SavedTensor(x),
         ss = SavedTensor(take_sqrt ? out : Tensor())](const std::vector<Tensor>& g) {
          // d var / dx = 2 (x - mean) / (n - c);  d std / dx = (x - mean) / ((n - c) std).
          Tensor x = sx.unpack();
          Tensor centred = sub(x, mean(x, p.dims, true));
          Tensor gk = reshape(g[0], p.kept);
          if (ss.defined()) {
            Tensor s = reshape(ss.unpack(), p.kept);
            gk = GradMode::is_enabled()
                     ? safe_div(gk, s)  // create_graph
                     : grad_op<reduce_grad_ops::SafeDiv>(p.kept, s.dtype(), s.device(), {expand(gk, p.kept), s});
            return std::vector<Tensor>{mul(centred, mul(gk, 1.0 / (double(p.n) - correction)))};
          }
          return std::vector<Tensor>{mul(centred, mul(gk, 2.0 / (double(p.n) - correction)))};
        },
        HigherOrder::Supported);
  return out;
}

// norm's gradient g·sign(x)·|x|^(p-1) / y^(p-1) (NormGradOps) in
// differentiable ops (create_graph), for p != 0; x, y (the norm) and g (split
// among ties for p = ±inf) broadcast over x. For p = 1 and ±inf ∂y/∂x is
// piecewise constant: the kernel's formula at g = 1, a constant factor.
Tensor norm_grad_in_ops(const Tensor& x, const Tensor& y, const Tensor& g, double p) {
  using namespace reduce_grad_ops;
  if (NormGradInf::matches(p) || NormGrad1::matches(p)) {
    Tensor one = ones(x.sizes(), {.dtype = x.dtype(), .device = x.device()});
    Tensor slope = NormGradInf::matches(p) ? grad_op<NormGradInf>(x.sizes(), x.dtype(), x.device(), {x, y, one})
                                           : grad_op<NormGrad1>(x.sizes(), x.dtype(), x.device(), {x, y, one});
    return mul(g, slope);
  }
  if (NormGrad2::matches(p)) return safe_div(mul(g, x), y);
  // 0 where y or x is 0; both are replaced by 1 there, so no derivative is NaN.
  Tensor dead = logical_or(eq(y, 0.0), eq(x, 0.0));
  Tensor xs = masked_fill(x, dead, 1.0), ys = masked_fill(y, dead, 1.0);
  Tensor ax = abs(xs);
  return masked_fill(mul(g, mul(div(xs, ax), pow(div(ax, ys), p - 1))), dead, 0.0);
}

}  // namespace

// ---- sum, mean, prod -----------------------------------------------------------

Tensor sum(const Tensor& x) { return sum(x, {}, false); }

Tensor sum(const Tensor& x, const Dims& dims, bool keepdim) {
  Plan p = make_plan(x, dims, keepdim, "sum");
  check_dtype(x, "sum", true, true, /*allow_half=*/true);
  Tensor out = present(run(ReduceOp::Sum, x, p, sum_dtype(x.dtype()), false).first, p);
  if (needs_grad({x}))
    record(
        "SumBackward", {x}, {out}, [p](const std::vector<Tensor>& g) { return std::vector<Tensor>{spread(g[0], p)}; },
        HigherOrder::Supported);
  return out;
}

Tensor mean(const Tensor& x) { return mean(x, {}, false); }

Tensor mean(const Tensor& x, const Dims& dims, bool keepdim) {
  Plan p = make_plan(x, dims, keepdim, "mean");
  check_dtype(x, "mean", false, false, /*allow_half=*/true);
  Tensor out = present(run(ReduceOp::Mean, x, p, x.dtype(), false).first, p);
  if (needs_grad({x}))
    record(
        "MeanBackward", {x}, {out},
        [p](const std::vector<Tensor>& g) { return std::vector<Tensor>{spread(mul(g[0], 1.0 / double(p.n)), p)}; },
        HigherOrder::Supported);
  return out;
}

Tensor prod(const Tensor& x) { return prod(x, {}, false); }

Tensor prod(const Tensor& x, const Dims& dims, bool keepdim) {
  Plan p = make_plan(x, dims, keepdim, "prod");
  check_dtype(x, "prod", true, true, /*allow_half=*/true);
  Tensor out = present(run(ReduceOp::Prod, x, p, sum_dtype(x.dtype()), false).first, p);
  if (needs_grad({x}))
    record(
        "ProdBackward", {x}, {out},
        [p, sx = SavedTensor(x), sy = SavedTensor(out)](const std::vector<Tensor>& g) {
          Tensor x = sx.unpack();
          if (GradMode::is_enabled())  // create_graph
            return std::vector<Tensor>{mul(spread(g[0], p), product_of_others(x, sy.unpack(), p))};
          // With the product of the nonzero elements and the zero count, each
          // element's derivative is the product of the others, even at zeros.
          auto [nonzero, zero_count] = run(ReduceOp::ProdNonzero, x, p, x.dtype(), true);
          return std::vector<Tensor>{grad_op<reduce_grad_ops::ProdGrad>(
              p.in, x.dtype(), x.device(), {x, spread(nonzero, p), spread(zero_count, p), spread(g[0], p)})};
        },
        HigherOrder::Supported);
  return out;
}

// ---- var, stddev -----------------------------------------------------------

Tensor var(const Tensor& x, const Dims& dims, VarOptions opts) {
  return variance(x, dims, opts.correction, opts.keepdim, false);
}

Tensor stddev(const Tensor& x, const Dims& dims, VarOptions opts) {
  return variance(x, dims, opts.correction, opts.keepdim, true);
}

// ---- max, min and friends -----------------------------------------------------

ValuesIndices max(const Tensor& x, int64_t dim, bool keepdim) { return select_along(x, dim, keepdim, true, "max"); }
ValuesIndices min(const Tensor& x, int64_t dim, bool keepdim) { return select_along(x, dim, keepdim, false, "min"); }
Tensor max(const Tensor& x) { return extreme(x, {}, false, true, "max"); }
Tensor min(const Tensor& x) { return extreme(x, {}, false, false, "min"); }
Tensor amax(const Tensor& x, const Dims& dims, bool keepdim) { return extreme(x, dims, keepdim, true, "amax"); }
Tensor amin(const Tensor& x, const Dims& dims, bool keepdim) { return extreme(x, dims, keepdim, false, "amin"); }
Tensor argmax(const Tensor& x) { return arg_along(x, {}, false, true, "argmax"); }
Tensor argmin(const Tensor& x) { return arg_along(x, {}, false, false, "argmin"); }
Tensor argmax(const Tensor& x, int64_t dim, bool keepdim) { return arg_along(x, {dim}, keepdim, true, "argmax"); }
Tensor argmin(const Tensor& x, int64_t dim, bool keepdim) { return arg_along(x, {dim}, keepdim, false, "argmin"); }

// ---- logsumexp, norm -----------------------------------------------------------

Tensor logsumexp(const Tensor& x, const Dims& dims, bool keepdim) {
  Plan p = make_plan(x, dims, keepdim, "logsumexp");
  check_dtype(x, "logsumexp", false, false, /*allow_half=*/true);
  Tensor y = run(ReduceOp::LogSumExp, x, p, x.dtype(), false).first;
  Tensor out = present(y, p);
  if (needs_grad({x}))
    record(
        "LogSumExpBackward", {x}, {out},
        [p, sx = SavedTensor(x), sy = SavedTensor(y)](const std::vector<Tensor>& g) {
          Tensor x = sx.unpack();
          if (GradMode::is_enabled())  // create_graph: g · softmax(x), the softmax from a recomputed logsumexp
            return std::vector<Tensor>{mul(spread(g[0], p), exp(sub(x, expand(logsumexp(x, p.dims, true), p.in))))};
          return std::vector<Tensor>{grad_op<reduce_grad_ops::SoftmaxGrad>(
              p.in, x.dtype(), x.device(), {x, spread(sy.unpack(), p), spread(g[0], p)})};
        },
        HigherOrder::Supported);
  return out;
}

Tensor norm(const Tensor& x, const Dims& dims, NormOptions opts) {
  const double p_ = opts.p;
  Plan p = make_plan(x, dims, opts.keepdim, "norm");
  check_dtype(x, "norm", false, false, /*allow_half=*/true);
  KS_CHECK(p_ >= 0 || p_ == -INFINITY, "norm: p must be positive, 0 or ±inf, got ", p_);
  Tensor y = run(ReduceOp::Norm, x, p, x.dtype(), false, {.p = p_}).first;
  Tensor out = present(y, p);
  if (needs_grad({x}))
    record(
        "NormBackward", {x}, {out},
        [p, p_, sx = SavedTensor(x), sy = SavedTensor(out)](const std::vector<Tensor>& g) {
          Tensor x = sx.unpack();
          if (p_ == 0) return std::vector<Tensor>{zeros(p.in, {.dtype = x.dtype(), .device = x.device()})};
          Tensor yb = spread(sy.unpack(), p);
          Tensor gk = reshape(g[0], p.kept);
          if (std::isinf(p_)) {  // like amax of |x|: split among ties
            Tensor tie = grad_op<reduce_grad_ops::AbsTieMask>(p.in, x.dtype(), x.device(), {x, yb});
            gk = div(gk, sum(tie, p.dims, true));
          }
          if (GradMode::is_enabled()) return std::vector<Tensor>{norm_grad_in_ops(x, yb, expand(gk, p.in), p_)};
          Tensor grad;
          for_each_op<reduce_grad_ops::NormGradOps>([&]<class Op>() {
            if (!grad.defined() && Op::matches(p_))
              grad = grad_op<Op>(p.in, x.dtype(), x.device(), {x, yb, expand(gk, p.in)}, p_);
          });
          return std::vector<Tensor>{grad};
        },
        HigherOrder::Supported);
  return out;
}

// ---- sum_to ---------------------------------------------------------------------

Tensor sum_to(const Tensor& g, const Shape& shape) {
  if (g.sizes() == shape) return g;
  const int64_t lead = g.dim() - int64_t(shape.size());
  KS_CHECK(lead >= 0, "sum_to: cannot reduce ", describe(g), " to ", shape);
  Dims dims;
  for (int64_t d = 0; d < g.dim(); ++d) {
    if (d < lead) {
      dims.push_back(d);
      continue;
    }
    int64_t want = shape[size_t(d - lead)];
    if (want == g.size(d)) continue;
    KS_CHECK(want == 1, "sum_to: cannot reduce ", describe(g), " to ", shape);
    dims.push_back(d);
  }
  if (dims.empty()) return reshape(g, shape);
  return reshape(sum(g, dims, true), shape);
}

}  // namespace ks
