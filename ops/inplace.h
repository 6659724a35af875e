// ops/inplace.h — in-place updates for optimizers, initialisers and buffers:
//   t = t + alpha * other        add_(t, other, alpha)
//   t = t + value * a * b        addcmul_(t, a, b, value)
//   t = t + value * a / b        addcdiv_(t, a, b, value)
// and sub_, mul_, div_, sqrt_, clamp_, masked_fill_, zero_.
//
// Rules (each violation throws, naming the op):
// - No history: Keystone does not rebase autograd graphs, so while grad mode
//   is on neither the target nor an operand may require grad. Optimizer
//   steps run under NoGradGuard.
// - The target keeps its shape: operands broadcast to it, never the reverse;
//   the target must not have overlapping (expanded) elements.
// - Operands have the target's dtype and device; dtypes as for the
//   out-of-place op (div_, addcmul_, addcdiv_, sqrt_ need float32/float64).
// - Each bumps the target's version, so a tensor saved for backward and then
//   modified is caught when backward unpacks it.
// An operand that overlaps the target's memory other than element for element
// is copied first, so add_(t, transpose(t)) is well defined.
// Each returns t (a handle to the same tensor), for chaining.
//
// Not here: fill_ and copy_ (core/copy.h); out-of-place ops (elementwise.h, unary.h).
#pragma once

#include <optional>

#include "core/dispatch.h"
#include "core/tensor.h"

namespace ks {

Tensor add_(const Tensor& t, const Tensor& other, double alpha = 1.0);
Tensor sub_(const Tensor& t, const Tensor& other, double alpha = 1.0);
Tensor mul_(const Tensor& t, const Tensor& other);
Tensor div_(const Tensor& t, const Tensor& other);
Tensor add_(const Tensor& t, double value);
Tensor sub_(const Tensor& t, double value);
Tensor mul_(const Tensor& t, double value);
Tensor div_(const Tensor& t, double value);
Tensor addcmul_(const Tensor& t, const Tensor& a, const Tensor& b, double value = 1.0);
Tensor addcdiv_(const Tensor& t, const Tensor& a, const Tensor& b, double value = 1.0);
Tensor sqrt_(const Tensor& t);
Tensor clamp_(const Tensor& t, std::optional<double> min, std::optional<double> max);
Tensor masked_fill_(const Tensor& t, const Tensor& mask, double value);
Tensor zero_(const Tensor& t);

// --- kernels: one table per op of InplaceOps (elementwise_formulas.h), filled by ops/elementwise_kernels.h ---
// AddScaled: t += alpha * a (b ignored).  Addcmul: t += alpha * a * b.  Addcdiv: t += alpha * a / b.
// (mul_, div_, sqrt_, clamp_, masked_fill_ run the out-of-place kernels with t as output.)
// a and b are views of t's shape that do not partially overlap t.
using InplaceKernel = void(double alpha, const Tensor& t, const Tensor& a, const Tensor& b);
template <class Op> constinit inline KernelTable<InplaceKernel> inplace_kernel("inplace");

}  // namespace ks
