// ops/cuda/elementwise.cu — CUDA kernels for binary and scalar elementwise
// ops and the fused backward of div, pow, maximum and minimum; the same
// formulas as ops/cpu/elementwise.cpp, run by cuda_map (core/cuda/loops.cuh)
// over any strides and broadcast views.
#include <cmath>

#include "core/cuda/loops.cuh"
#include "ops/elementwise.h"

namespace ks::cuda {
namespace {

template <class T>
__device__ inline T max_nan(T x, T y) {
  return (x > y || x != x) ? x : y;  // NaN in either operand wins
}
template <class T>
__device__ inline T min_nan(T x, T y) {
  return (x < y || x != x) ? x : y;
}

template <class T>
void binary_typed(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b) {
  switch (op) {
    case BinaryOp::Add: cuda_map<T, T, T>([] __device__(T x, T y) { return T(x + y); }, out, {a, b}); return;
    case BinaryOp::Sub: cuda_map<T, T, T>([] __device__(T x, T y) { return T(x - y); }, out, {a, b}); return;
    case BinaryOp::Mul: cuda_map<T, T, T>([] __device__(T x, T y) { return T(x * y); }, out, {a, b}); return;
    case BinaryOp::Maximum: cuda_map<T, T, T>([] __device__(T x, T y) { return max_nan(x, y); }, out, {a, b}); return;
    case BinaryOp::Minimum: cuda_map<T, T, T>([] __device__(T x, T y) { return min_nan(x, y); }, out, {a, b}); return;
    case BinaryOp::Div:
    case BinaryOp::Pow:
      if constexpr (std::is_floating_point_v<T>) {
        if (op == BinaryOp::Div) cuda_map<T, T, T>([] __device__(T x, T y) { return T(x / y); }, out, {a, b});
        else cuda_map<T, T, T>([] __device__(T x, T y) { return T(std::pow(x, y)); }, out, {a, b});
        return;
      }
      break;
  }
  KS_ASSERT(false);
}

void binary_cuda(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b) {
  dispatch_numeric(out.dtype(), "binary op", [&](auto tag) { binary_typed<typename decltype(tag)::type>(op, out, a, b); });
}

template <class T>
void scalar_typed(ScalarOp op, double s, const Tensor& out, const Tensor& x) {
  const T c = static_cast<T>(s);
  switch (op) {
    case ScalarOp::Add: cuda_map<T, T>([c] __device__(T v) { return T(v + c); }, out, {x}); return;
    case ScalarOp::Mul: cuda_map<T, T>([c] __device__(T v) { return T(v * c); }, out, {x}); return;
    case ScalarOp::RSub: cuda_map<T, T>([c] __device__(T v) { return T(c - v); }, out, {x}); return;
    case ScalarOp::RDiv:
      if constexpr (std::is_floating_point_v<T>) {
        cuda_map<T, T>([c] __device__(T v) { return T(c / v); }, out, {x});
        return;
      }
      break;
  }
  KS_ASSERT(false);
}

void scalar_cuda(ScalarOp op, double s, const Tensor& out, const Tensor& x) {
  dispatch_numeric(out.dtype(), "scalar op", [&](auto tag) { scalar_typed<typename decltype(tag)::type>(op, s, out, x); });
}

template <class T>
void binary_backward_typed(BinaryOp op, int which, const Tensor& gi, const Tensor& go, const Tensor& a,
                           const Tensor& b) {
  switch (op) {
    case BinaryOp::Div:
      if (which == 0) cuda_map<T, T, T>([] __device__(T g, T y) { return g / y; }, gi, {go, b});
      else cuda_map<T, T, T, T>([] __device__(T g, T x, T y) { return -g * x / (y * y); }, gi, {go, a, b});
      return;
    case BinaryOp::Pow:
      if (which == 0)
        cuda_map<T, T, T, T>(
            [] __device__(T g, T x, T y) { return y == T(0) ? T(0) : T(g * y * std::pow(x, y - T(1))); }, gi,
            {go, a, b});
      else
        // log 0 = -inf would give 0 * -inf; the limit of x^y log x is 0 for y > 0.
        cuda_map<T, T, T, T>(
            [] __device__(T g, T x, T y) {
              return (x == T(0) && y >= T(0)) ? T(0) : T(g * std::pow(x, y) * std::log(x));
            },
            gi, {go, a, b});
      return;
    case BinaryOp::Maximum:
    case BinaryOp::Minimum: {
      // Pass g to the input that won; split it where they tie.
      const bool max = op == BinaryOp::Maximum;
      if (max == (which == 0))
        cuda_map<T, T, T, T>(
            [] __device__(T g, T x, T y) { return x > y ? g : (x == y ? T(g * T(0.5)) : T(0)); }, gi, {go, a, b});
      else
        cuda_map<T, T, T, T>(
            [] __device__(T g, T x, T y) { return x < y ? g : (x == y ? T(g * T(0.5)) : T(0)); }, gi, {go, a, b});
      return;
    }
    case BinaryOp::Add:
    case BinaryOp::Sub:
    case BinaryOp::Mul: break;
  }
  KS_ASSERT(false);
}

void binary_backward_cuda(BinaryOp op, int which, const Tensor& gi, const Tensor& go, const Tensor& a,
                          const Tensor& b) {
  dispatch_floating(gi.dtype(), "binary backward", [&](auto tag) {
    binary_backward_typed<typename decltype(tag)::type>(op, which, gi, go, a, b);
  });
}

}  // namespace
KS_REGISTER_KERNEL(binary_kernel, CUDA, binary_cuda);
KS_REGISTER_KERNEL(scalar_kernel, CUDA, scalar_cuda);
KS_REGISTER_KERNEL(binary_backward_kernel, CUDA, binary_backward_cuda);
}  // namespace ks::cuda
