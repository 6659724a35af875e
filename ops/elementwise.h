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
// Not here: unary math (unary.h), comparisons/where (compare.h), in-place
// updates (inplace.h).
#pragma once

#include "core/dispatch.h"
#include "core/tensor.h"

namespace ks {

Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
// a ** b elementwise; gradient wrt a and b (d/db = a**b * log a, taken as 0 where a == 0 and b >= 0).
Tensor pow(const Tensor& a, const Tensor& b);
// Elementwise max/min; NaN wins. Where a == b the gradient is split evenly
// (half to each input), so it is a valid subgradient and symmetric in a, b.
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);

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
void check_numeric(const char* op, const Tensor& t);   // float32, float64, int64, int32
void check_floating(const char* op, const Tensor& t);  // float32, float64
// Same dtype and device.
void check_same_kind(const char* op, const Tensor& a, const Tensor& b);
// An integer tensor takes only an integral scalar within its range.
void check_scalar_fits(const char* op, const Tensor& t, double s);

// --- kernels ---
enum class BinaryOp { Add, Sub, Mul, Div, Pow, Maximum, Minimum };
// out = a (op) b; a and b are already broadcast views of out's shape, same dtype.
// out may be a itself (in-place updates).
using BinaryKernel = void(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b);
extern KernelTable<BinaryKernel> binary_kernel;

enum class ScalarOp { Add, Mul, RSub, RDiv };  // x + s, x * s, s - x, s / x
// out may be x itself.
using ScalarKernel = void(ScalarOp op, double s, const Tensor& out, const Tensor& x);
extern KernelTable<ScalarKernel> scalar_kernel;

// grad_in = grad_out * d(a op b)/d(input `which`: 0 for a, 1 for b), in one
// pass, all at out's shape (a, b broadcast views). For Div, Pow, Maximum, Minimum.
using BinaryBackwardKernel = void(BinaryOp op, int which, const Tensor& grad_in, const Tensor& grad_out,
                                  const Tensor& a, const Tensor& b);
extern KernelTable<BinaryBackwardKernel> binary_backward_kernel;

}  // namespace ks
