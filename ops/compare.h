// ops/compare.h — comparisons, logical ops and selection by a mask:
// eq, ne, lt, le, gt, ge, logical_not/and/or, where, masked_fill.
//
// Comparisons broadcast like arithmetic (elementwise.h), take two tensors of
// one numeric dtype (float32, float64, int64, int32) or a tensor and a number,
// and return a bool tensor with no gradient. NaN compares unequal to
// everything, itself included. A float tensor is compared with the number
// rounded to its dtype (x < 0.1 on float32 uses 0.1f), an integer tensor with
// the exact number (x < 2.5 on int64 is x <= 2).
//
// Masks are bool tensors (kBool); logical ops take and return bool only.
// where and masked_fill are differentiable in their value inputs.
//
// The comparisons and logical ops are descriptors in compare_formulas.h
// (adding one: ops/README.md).
// Not here: arithmetic (elementwise.h), the in-place masked_fill_ (inplace.h).
#pragma once

#include "core/dispatch.h"
#include "core/tensor.h"
#include "ops/compare_formulas.h"

namespace ks {

// --- kernels: one table per op of CompareOps and LogicalOps, filled by ops/compare_kernels.h ---
// out (bool) = a (op) b; a and b broadcast views of out's shape, one dtype.
using CompareKernel = void(const Tensor& out, const Tensor& a, const Tensor& b);
template <class Op> constinit inline KernelTable<CompareKernel> compare_kernel("compare");
// out (bool) = a (op) s, s compared as the header comment says.
using CompareScalarKernel = void(const Tensor& out, const Tensor& a, double s);
template <class Op> constinit inline KernelTable<CompareScalarKernel> compare_scalar_kernel("compare_scalar");
// out = a (op) b, all bool and of out's shape; b is ignored by logical_not.
using LogicalKernel = CompareKernel;
template <class Op> constinit inline KernelTable<LogicalKernel> logical_kernel("logical");

// The forwards of the templates below (compare.cpp).
Tensor compare_apply(const char* name, const KernelTable<CompareKernel>& kernel, const Tensor& a, const Tensor& b);
Tensor compare_apply(const char* name, const KernelTable<CompareScalarKernel>& kernel, const Tensor& a, double s);
Tensor logical_apply(const char* name, const KernelTable<LogicalKernel>& kernel, const Tensor& a, const Tensor& b);

template <class Op> Tensor compare(const Tensor& a, const Tensor& b) {
  return compare_apply(Op::name, compare_kernel<Op>, a, b);
}
template <class Op> Tensor compare(const Tensor& a, double s) {
  return compare_apply(Op::name, compare_scalar_kernel<Op>, a, s);
}

inline Tensor eq(const Tensor& a, const Tensor& b) { return compare<compare_ops::Eq>(a, b); }
inline Tensor ne(const Tensor& a, const Tensor& b) { return compare<compare_ops::Ne>(a, b); }
inline Tensor lt(const Tensor& a, const Tensor& b) { return compare<compare_ops::Lt>(a, b); }
inline Tensor le(const Tensor& a, const Tensor& b) { return compare<compare_ops::Le>(a, b); }
inline Tensor gt(const Tensor& a, const Tensor& b) { return compare<compare_ops::Gt>(a, b); }
inline Tensor ge(const Tensor& a, const Tensor& b) { return compare<compare_ops::Ge>(a, b); }
inline Tensor eq(const Tensor& a, double b) { return compare<compare_ops::Eq>(a, b); }
inline Tensor ne(const Tensor& a, double b) { return compare<compare_ops::Ne>(a, b); }
inline Tensor lt(const Tensor& a, double b) { return compare<compare_ops::Lt>(a, b); }
inline Tensor le(const Tensor& a, double b) { return compare<compare_ops::Le>(a, b); }
inline Tensor gt(const Tensor& a, double b) { return compare<compare_ops::Gt>(a, b); }
inline Tensor ge(const Tensor& a, double b) { return compare<compare_ops::Ge>(a, b); }

inline Tensor logical_not(const Tensor& a) {
  return logical_apply(compare_ops::LogicalNot::name, logical_kernel<compare_ops::LogicalNot>, a, a);
}
inline Tensor logical_and(const Tensor& a, const Tensor& b) {
  return logical_apply(compare_ops::LogicalAnd::name, logical_kernel<compare_ops::LogicalAnd>, a, b);
}
inline Tensor logical_or(const Tensor& a, const Tensor& b) {
  return logical_apply(compare_ops::LogicalOr::name, logical_kernel<compare_ops::LogicalOr>, a, b);
}

// cond ? a : b elementwise; cond (bool), a and b (one dtype) broadcast
// together, e.g. cond (T, T) with a (B, H, T, T) and a 0-dim b. Gradients go
// to a where cond holds and to b elsewhere, summed to their shapes.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
// x with `value` wherever mask (bool, broadcast to x's shape — never the
// reverse) is true; e.g. attention scores (B, H, T, S) with a causal mask
// (T, S) and -inf. The gradient is zero where filled.
Tensor masked_fill(const Tensor& x, const Tensor& mask, double value);

// out = cond ? a : b; all views of out's shape; a, b, out of one dtype.
using WhereKernel = void(const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b);
extern KernelTable<WhereKernel> where_kernel;
// out = (mask == fill_when) ? value : x; mask a bool view of out's shape; out may be x.
// (fill_when = false zeroes a gradient where a mask does *not* hold, in one pass.)
using MaskedFillKernel = void(const Tensor& out, const Tensor& x, const Tensor& mask, double value, bool fill_when);
extern KernelTable<MaskedFillKernel> masked_fill_kernel;

}  // namespace ks
