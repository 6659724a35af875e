// ops/cpu/unary.cpp — CPU kernels for the unary ops and their fused backwards.
//
// Each op is a scalar lambda handed to cpu_map, whose contiguous loop GCC
// vectorises: float32 transcendentals come from vec_math.h, float64 from libm.
// Selects are written as `cond ? a : b` over values computed either way, so
// they become blends rather than branches. pow with an arbitrary exponent is
// the one scalar libm call left (common exponents are special-cased).
#include <cmath>
#include <limits>

#include "ops/cpu/loops.h"
#include "ops/cpu/vec_math.h"
#include "ops/unary.h"

namespace ks::cpu {
namespace {

// √(2/π) and 1/√(2π) for the gelu forms.
constexpr double kSqrt2OverPi = 0.79788456080286535588;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;
constexpr double kGeluTanhC = 0.044715;

// A bound for an integer clamp: ±inf (an absent bound) saturates.
template <class T>
T int_bound(double v) {
  if (v <= double(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
  if (v >= double(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
  return T(v);
}

template <class T>
void integer_unary(UnaryOp op, const UnaryParams& p, const Tensor& out, const Tensor& x) {
  switch (op) {
    case UnaryOp::Neg: cpu_map<T, T>([](T v) { return T(-v); }, out, {x}); return;
    case UnaryOp::Abs: cpu_map<T, T>([](T v) { return v < 0 ? T(-v) : v; }, out, {x}); return;
    case UnaryOp::Relu: cpu_map<T, T>([](T v) { return v < 0 ? T(0) : v; }, out, {x}); return;
    case UnaryOp::Clamp: {
      const T lo = int_bound<T>(p.a), hi = int_bound<T>(p.b);
      cpu_map<T, T>([lo, hi](T v) { return v < lo ? lo : (v > hi ? hi : v); }, out, {x});
      return;
    }
    default: KS_ASSERT(false);
  }
}

// x ** e, with the exponents models use written out so those loops vectorise.
template <class T>
void pow_scalar(double e, const Tensor& out, const Tensor& x) {
  const T c = T(e);
  if (e == 0) cpu_map<T, T>([](T) { return T(1); }, out, {x});
  else if (e == 1) cpu_map<T, T>([](T v) { return v; }, out, {x});
  else if (e == 2) cpu_map<T, T>([](T v) { return v * v; }, out, {x});
  else if (e == 3) cpu_map<T, T>([](T v) { return v * v * v; }, out, {x});
  else if (e == 0.5) cpu_map<T, T>([](T v) { return std::sqrt(v); }, out, {x});
  else if (e == -0.5) cpu_map<T, T>([](T v) { return T(1) / std::sqrt(v); }, out, {x});
  else if (e == -1) cpu_map<T, T>([](T v) { return T(1) / v; }, out, {x});
  else cpu_map<T, T>([c](T v) { return T(std::pow(v, c)); }, out, {x});
}

template <class T>
void floating_unary(UnaryOp op, const UnaryParams& p, const Tensor& out, const Tensor& x) {
  switch (op) {
    case UnaryOp::Neg: cpu_map<T, T>([](T v) { return -v; }, out, {x}); return;
    case UnaryOp::Exp: cpu_map<T, T>([](T v) { return vmath::exp(v); }, out, {x}); return;
    case UnaryOp::Log: cpu_map<T, T>([](T v) { return vmath::log(v); }, out, {x}); return;
    case UnaryOp::Sqrt: cpu_map<T, T>([](T v) { return std::sqrt(v); }, out, {x}); return;
    case UnaryOp::Rsqrt: cpu_map<T, T>([](T v) { return T(1) / std::sqrt(v); }, out, {x}); return;
    case UnaryOp::Abs: cpu_map<T, T>([](T v) { return std::fabs(v); }, out, {x}); return;
    case UnaryOp::Tanh: cpu_map<T, T>([](T v) { return vmath::tanh(v); }, out, {x}); return;
    case UnaryOp::Sigmoid: cpu_map<T, T>([](T v) { return vmath::sigmoid(v); }, out, {x}); return;
    case UnaryOp::Relu: cpu_map<T, T>([](T v) { return v < T(0) ? T(0) : v; }, out, {x}); return;  // NaN stays
    case UnaryOp::Silu: cpu_map<T, T>([](T v) { return v * vmath::sigmoid(v); }, out, {x}); return;
    case UnaryOp::Gelu:
      cpu_map<T, T>([](T v) { return T(0.5) * v * (T(1) + vmath::erf(v * T(M_SQRT1_2))); }, out, {x});
      return;
    case UnaryOp::GeluTanh:
      cpu_map<T, T>(
          [](T v) {
            const T u = T(kSqrt2OverPi) * (v + T(kGeluTanhC) * v * v * v);
            return T(0.5) * v * (T(1) + vmath::tanh(u));
          },
          out, {x});
      return;
    case UnaryOp::Elu: {
      const T alpha = T(p.a);
      cpu_map<T, T>(
          [alpha](T v) {
            const T below = alpha * vmath::expm1(v);
            return v > T(0) ? v : below;
          },
          out, {x});
      return;
    }
    case UnaryOp::Clamp: {
      const T lo = T(p.a), hi = T(p.b);
      cpu_map<T, T>([lo, hi](T v) { return v < lo ? lo : (v > hi ? hi : v); }, out, {x});
      return;
    }
    case UnaryOp::Pow: pow_scalar<T>(p.a, out, x); return;
  }
  KS_ASSERT(false);
}

void unary_cpu(UnaryOp op, const UnaryParams& p, const Tensor& out, const Tensor& x) {
  dispatch_numeric(out.dtype(), "unary op", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_integral_v<T>) integer_unary<T>(op, p, out, x);
    else floating_unary<T>(op, p, out, x);
  });
}

// grad * d/dx (x ** e), special-cased like the forward.
template <class T>
void pow_scalar_backward(double e, const Tensor& gi, const Tensor& go, const Tensor& x) {
  const T c = T(e), cm1 = T(e - 1);
  if (e == 0) cpu_map<T, T, T>([](T, T) { return T(0); }, gi, {go, x});
  else if (e == 1) cpu_map<T, T, T>([](T g, T) { return g; }, gi, {go, x});
  else if (e == 2) cpu_map<T, T, T>([](T g, T v) { return T(2) * g * v; }, gi, {go, x});
  else if (e == 3) cpu_map<T, T, T>([](T g, T v) { return T(3) * g * v * v; }, gi, {go, x});
  else if (e == 0.5) cpu_map<T, T, T>([](T g, T v) { return T(0.5) * g / std::sqrt(v); }, gi, {go, x});
  else if (e == -1) cpu_map<T, T, T>([](T g, T v) { return -g / (v * v); }, gi, {go, x});
  else cpu_map<T, T, T>([c, cm1](T g, T v) { return c * g * T(std::pow(v, cm1)); }, gi, {go, x});
}

// `s` is the saved output or input, as unary.h lists.
template <class T>
void floating_unary_backward(UnaryOp op, const UnaryParams& p, const Tensor& gi, const Tensor& go, const Tensor& s) {
  switch (op) {
    case UnaryOp::Exp: cpu_map<T, T, T>([](T g, T y) { return g * y; }, gi, {go, s}); return;
    case UnaryOp::Log: cpu_map<T, T, T>([](T g, T x) { return g / x; }, gi, {go, s}); return;
    case UnaryOp::Sqrt: cpu_map<T, T, T>([](T g, T y) { return T(0.5) * g / y; }, gi, {go, s}); return;
    case UnaryOp::Rsqrt: cpu_map<T, T, T>([](T g, T y) { return T(-0.5) * g * y * y * y; }, gi, {go, s}); return;
    case UnaryOp::Abs:
      cpu_map<T, T, T>([](T g, T x) { return x > T(0) ? g : (x < T(0) ? -g : T(0)); }, gi, {go, s});
      return;
    case UnaryOp::Tanh: cpu_map<T, T, T>([](T g, T y) { return g * (T(1) - y * y); }, gi, {go, s}); return;
    case UnaryOp::Sigmoid: cpu_map<T, T, T>([](T g, T y) { return g * y * (T(1) - y); }, gi, {go, s}); return;
    case UnaryOp::Relu: cpu_map<T, T, T>([](T g, T y) { return y > T(0) ? g : T(0); }, gi, {go, s}); return;
    case UnaryOp::Silu:
      cpu_map<T, T, T>(
          [](T g, T x) {
            const T sg = vmath::sigmoid(x);
            return g * sg * (T(1) + x * (T(1) - sg));
          },
          gi, {go, s});
      return;
    case UnaryOp::Gelu:
      cpu_map<T, T, T>(
          [](T g, T x) {
            const T cdf = T(0.5) * (T(1) + vmath::erf(x * T(M_SQRT1_2)));
            const T pdf = T(kInvSqrt2Pi) * vmath::exp(T(-0.5) * x * x);
            return g * (cdf + x * pdf);
          },
          gi, {go, s});
      return;
    case UnaryOp::GeluTanh:
      cpu_map<T, T, T>(
          [](T g, T x) {
            const T x2 = x * x;
            const T t = vmath::tanh(T(kSqrt2OverPi) * x * (T(1) + T(kGeluTanhC) * x2));
            const T du = T(kSqrt2OverPi) * (T(1) + T(3 * kGeluTanhC) * x2);
            return g * T(0.5) * ((T(1) + t) + x * (T(1) - t * t) * du);
          },
          gi, {go, s});
      return;
    case UnaryOp::Elu: {
      const T alpha = T(p.a);
      cpu_map<T, T, T>(
          [alpha](T g, T x) {
            const T below = g * alpha * vmath::exp(x);
            return x > T(0) ? g : below;
          },
          gi, {go, s});
      return;
    }
    case UnaryOp::Clamp: {
      const T lo = T(p.a), hi = T(p.b);
      cpu_map<T, T, T>([lo, hi](T g, T x) { return (x >= lo && x <= hi) ? g : T(0); }, gi, {go, s});
      return;
    }
    case UnaryOp::Pow: pow_scalar_backward<T>(p.a, gi, go, s); return;
    case UnaryOp::Neg: break;  // neg's backward is neg
  }
  KS_ASSERT(false);
}

void unary_backward_cpu(UnaryOp op, const UnaryParams& p, const Tensor& gi, const Tensor& go, const Tensor& s) {
  dispatch_floating(gi.dtype(), "unary backward", [&](auto tag) {
    floating_unary_backward<typename decltype(tag)::type>(op, p, gi, go, s);
  });
}

}  // namespace
KS_REGISTER_KERNEL(unary_kernel, CPU, unary_cpu);
KS_REGISTER_KERNEL(unary_backward_kernel, CPU, unary_backward_cpu);
}  // namespace ks::cpu
