// ops/cpu/elementwise.cpp — CPU kernels for binary and scalar elementwise ops
// and the fused backward of div, pow, maximum and minimum.
//
// Dtypes were checked by the ops; a dtype reaching a branch it cannot run is
// an internal error. pow has no vectorised form (std::pow per element).
#include <cmath>

#include "ops/cpu/loops.h"
#include "ops/elementwise.h"

namespace ks::cpu {
namespace {

template <class T>
inline T max_nan(T x, T y) {
  return (x > y || x != x) ? x : y;  // NaN in either operand wins
}
template <class T>
inline T min_nan(T x, T y) {
  return (x < y || x != x) ? x : y;
}

void binary_cpu(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b) {
  dispatch_numeric(out.dtype(), "binary op", [&](auto tag) {
    using T = typename decltype(tag)::type;
    switch (op) {
      case BinaryOp::Add: cpu_map<T, T, T>([](T x, T y) { return T(x + y); }, out, {a, b}); return;
      case BinaryOp::Sub: cpu_map<T, T, T>([](T x, T y) { return T(x - y); }, out, {a, b}); return;
      case BinaryOp::Mul: cpu_map<T, T, T>([](T x, T y) { return T(x * y); }, out, {a, b}); return;
      case BinaryOp::Maximum: cpu_map<T, T, T>([](T x, T y) { return max_nan(x, y); }, out, {a, b}); return;
      case BinaryOp::Minimum: cpu_map<T, T, T>([](T x, T y) { return min_nan(x, y); }, out, {a, b}); return;
      case BinaryOp::Div:
      case BinaryOp::Pow:
        if constexpr (std::is_floating_point_v<T>) {
          if (op == BinaryOp::Div) cpu_map<T, T, T>([](T x, T y) { return T(x / y); }, out, {a, b});
          else cpu_map<T, T, T>([](T x, T y) { return T(std::pow(x, y)); }, out, {a, b});
          return;
        }
        break;
    }
    KS_ASSERT(false);
  });
}

void scalar_cpu(ScalarOp op, double s, const Tensor& out, const Tensor& x) {
  dispatch_numeric(out.dtype(), "scalar op", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T c = static_cast<T>(s);
    switch (op) {
      case ScalarOp::Add: cpu_map<T, T>([c](T v) { return T(v + c); }, out, {x}); return;
      case ScalarOp::Mul: cpu_map<T, T>([c](T v) { return T(v * c); }, out, {x}); return;
      case ScalarOp::RSub: cpu_map<T, T>([c](T v) { return T(c - v); }, out, {x}); return;
      case ScalarOp::RDiv:
        if constexpr (std::is_floating_point_v<T>) {
          cpu_map<T, T>([c](T v) { return T(c / v); }, out, {x});
          return;
        }
        break;
    }
    KS_ASSERT(false);
  });
}

void binary_backward_cpu(BinaryOp op, int which, const Tensor& gi, const Tensor& go, const Tensor& a,
                         const Tensor& b) {
  dispatch_floating(gi.dtype(), "binary backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T half = T(0.5);
    switch (op) {
      case BinaryOp::Div:
        if (which == 0) cpu_map<T, T, T>([](T g, T y) { return g / y; }, gi, {go, b});
        else cpu_map<T, T, T, T>([](T g, T x, T y) { return -g * x / (y * y); }, gi, {go, a, b});
        return;
      case BinaryOp::Pow:
        if (which == 0) {
          cpu_map<T, T, T, T>([](T g, T x, T y) { return y == T(0) ? T(0) : g * y * std::pow(x, y - T(1)); }, gi,
                              {go, a, b});
        } else {
          // log 0 = -inf would give 0 * -inf; the limit of x^y log x is 0 for y > 0.
          cpu_map<T, T, T, T>(
              [](T g, T x, T y) { return (x == T(0) && y >= T(0)) ? T(0) : g * std::pow(x, y) * std::log(x); }, gi,
              {go, a, b});
        }
        return;
      case BinaryOp::Maximum:
      case BinaryOp::Minimum: {
        // Pass g to the input that won; split it where they tie.
        const bool max = op == BinaryOp::Maximum;
        if (max == (which == 0))
          cpu_map<T, T, T, T>([half](T g, T x, T y) { return x > y ? g : (x == y ? g * half : T(0)); }, gi,
                              {go, a, b});
        else
          cpu_map<T, T, T, T>([half](T g, T x, T y) { return x < y ? g : (x == y ? g * half : T(0)); }, gi,
                              {go, a, b});
        return;
      }
      case BinaryOp::Add:
      case BinaryOp::Sub:
      case BinaryOp::Mul: break;
    }
    KS_ASSERT(false);
  });
}

}  // namespace
KS_REGISTER_KERNEL(binary_kernel, CPU, binary_cpu);
KS_REGISTER_KERNEL(scalar_kernel, CPU, scalar_cpu);
KS_REGISTER_KERNEL(binary_backward_kernel, CPU, binary_backward_cpu);
}  // namespace ks::cpu
