// ops/compare.cpp — checks and shapes of comparisons, logical ops, where and
// masked_fill, and the backward of the last two (masked_fill of the gradient:
// differentiable, so both support higher-order gradients). The formulas are
// descriptors (compare_formulas.h); the kernels are ops/compare_kernels.h's.
#include "ops/compare.h"

#include "autograd/node.h"
#include "ops/broadcast.h"
#include "ops/elementwise.h"
#include "ops/promote.h"
#include "ops/reduce.h"

namespace ks {

constinit KernelTable<WhereKernel> where_kernel("where");
constinit KernelTable<MaskedFillKernel> masked_fill_kernel("masked_fill");

namespace {

void check_bool(const char* op, const char* what, const Tensor& t) {
  KS_CHECK(t.defined(), op, ": undefined ", what);
  KS_CHECK(t.dtype() == kBool, op, ": ", what, " must be a bool tensor, got ", describe(t));
}

// A new tensor: g with 0 where mask is false (where's backward for a, without
// building !mask); mask broadcasts to g.
Tensor zero_where(const Tensor& g, const Tensor& mask) {
  Tensor out = Tensor::empty(g.sizes(), g.dtype(), g.device());
  if (out.numel() > 0) masked_fill_kernel(out.device(), out, g, broadcast_raw(mask, g.sizes(), "where"), 0.0, false);
  return out;
}

// The bool tensor of kernel(a, b) at their broadcast shape.
Tensor mask_of(const char* name, const KernelTable<CompareKernel>& kernel, const Tensor& a, const Tensor& b) {
  Shape shape = broadcast_shapes({a.sizes(), b.sizes()}, name);
  Tensor out = Tensor::empty(shape, kBool, a.device());
  if (out.numel() > 0) kernel(out.device(), out, broadcast_raw(a, shape, name), broadcast_raw(b, shape, name));
  return out;
}

}  // namespace

Tensor compare_apply(const char* name, const KernelTable<CompareKernel>& kernel, const Tensor& a_in,
                     const Tensor& b_in) {
  const auto [a, b] = promoted(name, a_in, b_in);
  check_same_kind(name, a, b);
  check_numeric(name, a);
  return mask_of(name, kernel, a, b);
}

Tensor compare_apply(const char* name, const KernelTable<CompareScalarKernel>& kernel, const Tensor& a, double s) {
  check_numeric(name, a);
  Tensor out = Tensor::empty(a.sizes(), kBool, a.device());
  if (out.numel() > 0) kernel(out.device(), out, a, s);
  return out;
}

Tensor logical_apply(const char* name, const KernelTable<LogicalKernel>& kernel, const Tensor& a, const Tensor& b) {
  check_bool(name, "input", a);
  check_bool(name, "input", b);
  KS_CHECK(a.device() == b.device(), name, ": device mismatch, ", describe(a), " and ", describe(b));
  return mask_of(name, kernel, a, b);
}

Tensor where(const Tensor& cond, const Tensor& a_in, const Tensor& b_in) {
  check_bool("where", "condition", cond);
  const auto operands = promoted("where", a_in, b_in);
  const Tensor &a = operands.first, &b = operands.second;
  check_same_kind("where", a, b);
  KS_CHECK(cond.device() == a.device(), "where: device mismatch, condition ", describe(cond), " and ", describe(a));
  Shape shape = broadcast_shapes({cond.sizes(), a.sizes(), b.sizes()}, "where");
  Tensor out = Tensor::empty(shape, a.dtype(), a.device());
  if (out.numel() > 0)
    where_kernel(out.device(), out, broadcast_raw(cond, shape, "where"), broadcast_raw(a, shape, "where"),
                 broadcast_raw(b, shape, "where"));
  if (needs_grad({a, b}))
    record(
        "WhereBackward", {a, b}, {out},
        [sc = SavedTensor(cond), shape_a = a.sizes(), shape_b = b.sizes(), ga = a.requires_grad(),
         gb = b.requires_grad()](const std::vector<Tensor>& g) {
          Tensor c = sc.unpack();
          Tensor da, db;
          if (ga)  // create_graph: g without the !c elements through masked_fill (differentiable)
            da = sum_to(GradMode::is_enabled() ? masked_fill(g[0], logical_not(c), 0.0) : zero_where(g[0], c), shape_a);
          if (gb) db = sum_to(masked_fill(g[0], c, 0.0), shape_b);
          return std::vector<Tensor>{da, db};
        },
        HigherOrder::Supported);
  return out;
}

Tensor masked_fill(const Tensor& x, const Tensor& mask, double value) {
  KS_CHECK(x.defined(), "masked_fill: undefined input");
  check_bool("masked_fill", "mask", mask);
  KS_CHECK(x.device() == mask.device(), "masked_fill: device mismatch, ", describe(x), " and mask ", describe(mask));
  KS_CHECK(broadcast_shapes({x.sizes(), mask.sizes()}, "masked_fill") == x.sizes(), "masked_fill: mask ",
           describe(mask), " does not broadcast to the input's shape ", x.sizes());
  check_scalar_fits("masked_fill", x, value);
  KS_CHECK(x.dtype() != kBool || value == 0 || value == 1, "masked_fill: value ", value,
           " is not 0 or 1 for a bool tensor");
  Tensor out = Tensor::empty(x.sizes(), x.dtype(), x.device());
  if (out.numel() > 0)
    masked_fill_kernel(out.device(), out, x, broadcast_raw(mask, x.sizes(), "masked_fill"), value, true);
  if (needs_grad({x}))
    record(
        "MaskedFillBackward", {x}, {out},
        [sm = SavedTensor(mask)](const std::vector<Tensor>& g) {
          return std::vector<Tensor>{masked_fill(g[0], sm.unpack(), 0.0)};
        },
        HigherOrder::Supported);
  return out;
}

}  // namespace ks
