// ops/elementwise.h — binary elementwise arithmetic with NumPy broadcasting:
// add, sub, mul, div, pow, maximum, minimum, their scalar forms, operators.
//
// Binary ops take two tensors of one dtype and device whose shapes broadcast
// (broadcast.h); the result has the broadcast shape, e.g. (B, T, C) + (C) ->
// (B, T, C). Gradients are summed back over broadcast dims to each input's
// shape (sum_to in reduce.h). A scalar (double) operand is a constant.
//
// Dtypes: add, sub, mul, maximum, minimum on float32, float64, int64, int32;
// div and pow on float32/float64 only. Both operands must have the same dtype
// (no implicit promotion); bool tensors are masks, not numbers (compare.h).
// With an integer tensor the scalar must be an integer.
//
// The ops' formulas are descriptors in elementwise_formulas.h (adding one:
// ops/README.md). Not here: unary math (unary.h), comparisons/where
// (compare.h), in-place updates (inplace.h).
#pragma once

#include "core/dispatch.h"
#include "core/tensor.h"
#include "ops/elementwise_formulas.h"

namespace ks {

// --- kernels: one table per op of BinaryOps, ScalarOps and InplaceOps, filled by ops/elementwise_kernels.h ---
// out = a (op) b; a and b are already broadcast views of out's shape, same dtype.
// out may be a itself (in-place updates).
using BinaryKernel = void(const Tensor& out, const Tensor& a, const Tensor& b);
template <class Op> constinit inline KernelTable<BinaryKernel> binary_kernel("binary");
// grad_in = grad_out * d(a op b)/d(input `which`: 0 for a, 1 for b), in one
// pass, all at out's shape (a, b broadcast views; a undefined if Op::da reads
// only b). For the ops with da and db.
using BinaryBackwardKernel = void(int which, const Tensor& grad_in, const Tensor& grad_out, const Tensor& a,
                                  const Tensor& b);
template <class Op> constinit inline KernelTable<BinaryBackwardKernel> binary_backward_kernel("binary_backward");
// grad_in = d2(grad_grad * grad_out, a, b) with d2 = Op::daa, dab, dbb for
// `which` 0, 1, 2: the derivative of the gradient for a (which 0, 1) or for b
// (which 1, 2) with respect to a (0, 1) or b (1, 2), all at out's shape, for
// a backward that is differentiated (create_graph). For the ops with daa, dab, dbb.
using BinaryDoubleBackwardKernel = void(int which, const Tensor& grad_in, const Tensor& grad_grad,
                                        const Tensor& grad_out, const Tensor& a, const Tensor& b);
template <class Op>
constinit inline KernelTable<BinaryDoubleBackwardKernel> binary_double_backward_kernel("binary_double_backward");
// out = x (op) s; out may be x itself.
using ScalarKernel = void(double s, const Tensor& out, const Tensor& x);
template <class Op> constinit inline KernelTable<ScalarKernel> scalar_kernel("scalar");

// What the templates below hand to the non-template code (elementwise.cpp).
struct BinaryInfo : OpInfo<BinaryKernel, BinaryBackwardKernel> {
  const KernelTable<BinaryDoubleBackwardKernel>& double_backward;
};
template <class Op> BinaryInfo binary_info() {
  return {{Op::name, Op::node, Op::integers, Saves::Input, binary_kernel<Op>, binary_backward_kernel<Op>},
          binary_double_backward_kernel<Op>};
}
// a (op) b, checked and broadcast, without autograd.
Tensor binary_forward(const BinaryInfo& op, const Tensor& a, const Tensor& b);
// binary_forward with the generic backward: both inputs saved, Op's da and db
// kernels; under create_graph each gradient is an op "<node>Backward" of (g, a,
// b) whose own backward runs the daa, dab, dbb kernels (a third derivative
// raises an error naming it).
Tensor binary_with_grads(const BinaryInfo& op, const Tensor& a, const Tensor& b);

template <class Op> Tensor binary(const Tensor& a, const Tensor& b) {
  static_assert(
      requires(float t) { Op::daa(t, t, t) + Op::dab(t, t, t) + Op::dbb(t, t, t); },
      "binary<Op>: the generic backward needs Op's second derivatives daa, dab and dbb beside da and db");
  return binary_with_grads(binary_info<Op>(), a, b);
}

Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
// a ** b elementwise; gradient wrt a and b (d/db = a**b * log a, taken as 0 where a == 0 and b >= 0).
inline Tensor pow(const Tensor& a, const Tensor& b) { return binary<binary_ops::Pow>(a, b); }
// Elementwise max/min; NaN wins. Where a == b the gradient is split evenly
// (half to each input), so it is a valid subgradient and symmetric in a, b.
inline Tensor maximum(const Tensor& a, const Tensor& b) { return binary<binary_ops::Maximum>(a, b); }
inline Tensor minimum(const Tensor& a, const Tensor& b) { return binary<binary_ops::Minimum>(a, b); }

Tensor add(const Tensor& a, double b);
Tensor sub(const Tensor& a, double b);
Tensor mul(const Tensor& a, double b);
Tensor div(const Tensor& a, double b);
Tensor add(double a, const Tensor& b);
Tensor sub(double a, const Tensor& b);  // a - b
Tensor mul(double a, const Tensor& b);
Tensor div(double a, const Tensor& b);  // a / b

inline Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
inline Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
inline Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
inline Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
inline Tensor operator+(const Tensor& a, double b) { return add(a, b); }
inline Tensor operator-(const Tensor& a, double b) { return sub(a, b); }
inline Tensor operator*(const Tensor& a, double b) { return mul(a, b); }
inline Tensor operator/(const Tensor& a, double b) { return div(a, b); }
inline Tensor operator+(double a, const Tensor& b) { return add(a, b); }
inline Tensor operator-(double a, const Tensor& b) { return sub(a, b); }
inline Tensor operator*(double a, const Tensor& b) { return mul(a, b); }
inline Tensor operator/(double a, const Tensor& b) { return div(a, b); }

// --- dtype checks shared by the elementwise families (unary, compare, inplace) ---
// Each throws "<op>: expected ... got <describe(t)>".
// The 16-bit types pass: the kernels compute them in float32 (ops/kernel_dtypes.h).
void check_numeric(const char* op, const Tensor& t);   // float32, float64, bfloat16, float16, int64, int32
void check_floating(const char* op, const Tensor& t);  // float32, float64, bfloat16, float16
// Same dtype and device.
void check_same_kind(const char* op, const Tensor& a, const Tensor& b);
// An integer tensor takes only an integral scalar within its range.
void check_scalar_fits(const char* op, const Tensor& t, double s);

}  // namespace ks
