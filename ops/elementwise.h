// ops/elementwise.h — elementwise arithmetic with NumPy broadcasting.
//
// Binary ops take two tensors of one dtype whose shapes broadcast
// (broadcast.h); the result has the broadcast shape and the inputs' dtype and
// device. Gradients are summed back over broadcast dims to each input's shape
// (sum_to in reduce.h). Scalar overloads treat the number as a constant.
#pragma once

#include "core/dispatch.h"
#include "core/tensor.h"

namespace ks {

Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);

Tensor add(const Tensor& a, double b);
Tensor sub(const Tensor& a, double b);
Tensor mul(const Tensor& a, double b);
Tensor div(const Tensor& a, double b);

inline Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
inline Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
inline Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
inline Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
inline Tensor operator+(const Tensor& a, double b) { return add(a, b); }
inline Tensor operator-(const Tensor& a, double b) { return sub(a, b); }
inline Tensor operator*(const Tensor& a, double b) { return mul(a, b); }
inline Tensor operator/(const Tensor& a, double b) { return div(a, b); }
inline Tensor operator+(double a, const Tensor& b) { return add(b, a); }
inline Tensor operator*(double a, const Tensor& b) { return mul(b, a); }

// --- kernels ---
enum class BinaryOp { Add, Sub, Mul, Div };
// out = a (op) b; a and b are already broadcast views of out's shape, same dtype.
using BinaryKernel = void(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b);
extern KernelTable<BinaryKernel> binary_kernel;

enum class ScalarOp { Add, Mul, RSub, RDiv };  // x + s, x * s, s - x, s / x
using ScalarKernel = void(ScalarOp op, double s, const Tensor& out, const Tensor& x);
extern KernelTable<ScalarKernel> scalar_kernel;

}  // namespace ks
