// ops/unary_formulas.h — the formulas of the unary ops and of their fused
// backwards, written once for the CPU and the CUDA kernels.
//
//   UnaryForward<Op, T>{a, b}(x)              = f(x)
//   UnaryBackward<Op, T>{a, b}(g, saved)      = g · f'(x)   (saved: unary.h)
//   PowForward<Case, T>, PowBackward<Case, T>: x ** c, with the exponents
//     models use (0, 1, 2, 3, ±½, -1) written out so those loops vectorise
//
// Each is a small struct whose call operator is KS_HOST_DEVICE, so the same
// object runs in the CPU's loop and in the GPU's. The kernels themselves,
// unary_forward<Loops> and unary_backward<Loops>, are written here once too:
// they turn the run-time op into its functor and hand it to Loops::map, which
// is cpu_map for CpuLoops (ops/cpu/loops.h) and cuda_map for CudaLoops
// (core/cuda/loops.cuh); the backends' files only register them
// (register_unary_kernels).
//
// Selects are written `cond ? a : b` over values computed either way, so the
// CPU loops become blends, not branches. Math functions are ks::kmath's
// (ops/kernel_math.h): vec_math.h on the CPU, CUDA's libm on the GPU.
// Not here: argument checks and autograd (unary.cpp), the loops (backends).
#pragma once

#include <limits>
#include <type_traits>

#include "core/dtype.h"
#include "core/error.h"
#include "core/tensor.h"
#include "ops/kernel_math.h"
#include "ops/unary.h"

namespace ks::unary_formulas {

constexpr double kSqrt2OverPi = 0.79788456080286535588;  // √(2/π)
constexpr double kInvSqrt2Pi = 0.39894228040143267794;   // 1/√(2π)
constexpr double kSqrtHalf = 0.70710678118654752440;     // 1/√2
constexpr double kGeluTanhC = 0.044715;

// f(x). a, b: UnaryParams (elu: alpha; clamp: min, max).
template <UnaryOp Op, class T>
struct UnaryForward {
  T a, b;
  KS_HOST_DEVICE T operator()(T v) const {
    if constexpr (Op == UnaryOp::Neg) return T(-v);
    else if constexpr (Op == UnaryOp::Abs) return v < T(0) ? T(-v) : v;
    else if constexpr (Op == UnaryOp::Relu) return v < T(0) ? T(0) : v;  // NaN stays NaN
    else if constexpr (Op == UnaryOp::Clamp) return v < a ? a : (v > b ? b : v);
    else if constexpr (Op == UnaryOp::Exp) return kmath::exp(v);
    else if constexpr (Op == UnaryOp::Log) return kmath::log(v);
    else if constexpr (Op == UnaryOp::Sqrt) return kmath::sqrt(v);
    else if constexpr (Op == UnaryOp::Rsqrt) return T(1) / kmath::sqrt(v);
    else if constexpr (Op == UnaryOp::Tanh) return kmath::tanh(v);
    else if constexpr (Op == UnaryOp::Sigmoid) return kmath::sigmoid(v);
    else if constexpr (Op == UnaryOp::Silu) return v * kmath::sigmoid(v);
    else if constexpr (Op == UnaryOp::Gelu) return T(0.5) * v * (T(1) + kmath::erf(v * T(kSqrtHalf)));
    else if constexpr (Op == UnaryOp::GeluTanh) {
      const T u = T(kSqrt2OverPi) * (v + T(kGeluTanhC) * v * v * v);
      return T(0.5) * v * (T(1) + kmath::tanh(u));
    } else if constexpr (Op == UnaryOp::Elu) {
      const T below = a * kmath::expm1(v);
      return v > T(0) ? v : below;
    } else {
      static_assert(Op == UnaryOp::Neg, "pow has PowForward");
    }
  }
};

// g · f'(x), with s the saved output or input as unary.h lists.
template <UnaryOp Op, class T>
struct UnaryBackward {
  T a, b;
  KS_HOST_DEVICE T operator()(T g, T s) const {
    if constexpr (Op == UnaryOp::Exp) return g * s;                  // s = y
    else if constexpr (Op == UnaryOp::Log) return g / s;             // s = x
    else if constexpr (Op == UnaryOp::Sqrt) return T(0.5) * g / s;   // s = y
    else if constexpr (Op == UnaryOp::Rsqrt) return T(-0.5) * g * s * s * s;
    else if constexpr (Op == UnaryOp::Abs) return s > T(0) ? g : (s < T(0) ? -g : T(0));
    else if constexpr (Op == UnaryOp::Tanh) return g * (T(1) - s * s);
    else if constexpr (Op == UnaryOp::Sigmoid) return g * s * (T(1) - s);
    else if constexpr (Op == UnaryOp::Relu) return s > T(0) ? g : T(0);
    else if constexpr (Op == UnaryOp::Clamp) return (s >= a && s <= b) ? g : T(0);
    else if constexpr (Op == UnaryOp::Silu) {
      const T sg = kmath::sigmoid(s);
      return g * sg * (T(1) + s * (T(1) - sg));
    } else if constexpr (Op == UnaryOp::Gelu) {
      const T cdf = T(0.5) * (T(1) + kmath::erf(s * T(kSqrtHalf)));
      const T pdf = T(kInvSqrt2Pi) * kmath::exp(T(-0.5) * s * s);
      return g * (cdf + s * pdf);
    } else if constexpr (Op == UnaryOp::GeluTanh) {
      const T x2 = s * s;
      const T t = kmath::tanh(T(kSqrt2OverPi) * s * (T(1) + T(kGeluTanhC) * x2));
      const T du = T(kSqrt2OverPi) * (T(1) + T(3 * kGeluTanhC) * x2);
      return g * T(0.5) * ((T(1) + t) + s * (T(1) - t * t) * du);
    } else if constexpr (Op == UnaryOp::Elu) {
      const T below = g * a * kmath::exp(s);
      return s > T(0) ? g : below;
    } else {
      static_assert(Op == UnaryOp::Exp, "neg's backward is neg; pow has PowBackward");
    }
  }
};

enum class PowCase { Zero, One, Two, Three, Half, MinusHalf, MinusOne, General };

inline PowCase pow_case(double e) {
  if (e == 0) return PowCase::Zero;
  if (e == 1) return PowCase::One;
  if (e == 2) return PowCase::Two;
  if (e == 3) return PowCase::Three;
  if (e == 0.5) return PowCase::Half;
  if (e == -0.5) return PowCase::MinusHalf;
  if (e == -1) return PowCase::MinusOne;
  return PowCase::General;
}

template <PowCase C, class T>
struct PowForward {
  T c, cm1;  // the exponent, and the exponent - 1 rounded once from float64
  KS_HOST_DEVICE T operator()(T v) const {
    if constexpr (C == PowCase::Zero) return T(1);
    else if constexpr (C == PowCase::One) return v;
    else if constexpr (C == PowCase::Two) return v * v;
    else if constexpr (C == PowCase::Three) return v * v * v;
    else if constexpr (C == PowCase::Half) return kmath::sqrt(v);
    else if constexpr (C == PowCase::MinusHalf) return T(1) / kmath::sqrt(v);
    else if constexpr (C == PowCase::MinusOne) return T(1) / v;
    else return kmath::pow(v, c);
  }
};

// g · c x^(c-1); s = x. ½ and -½ share the general form's cost, so only the
// exponents below have a written-out derivative.
template <PowCase C, class T>
struct PowBackward {
  T c, cm1;
  KS_HOST_DEVICE T operator()(T g, T v) const {
    if constexpr (C == PowCase::Zero) return T(0);
    else if constexpr (C == PowCase::One) return g;
    else if constexpr (C == PowCase::Two) return T(2) * g * v;
    else if constexpr (C == PowCase::Three) return T(3) * g * v * v;
    else if constexpr (C == PowCase::Half) return T(0.5) * g / kmath::sqrt(v);
    else if constexpr (C == PowCase::MinusOne) return -g / (v * v);
    else return c * g * kmath::pow(v, cm1);
  }
};

// run(f) with the PowForward / PowBackward functor of exponent e.
template <template <PowCase, class> class Fn, class T, class Run>
void with_pow(double e, Run&& run) {
  const T c = T(e), cm1 = T(e - 1);
  switch (pow_case(e)) {
    case PowCase::Zero: return run(Fn<PowCase::Zero, T>{c, cm1});
    case PowCase::One: return run(Fn<PowCase::One, T>{c, cm1});
    case PowCase::Two: return run(Fn<PowCase::Two, T>{c, cm1});
    case PowCase::Three: return run(Fn<PowCase::Three, T>{c, cm1});
    case PowCase::Half: return run(Fn<PowCase::Half, T>{c, cm1});
    case PowCase::MinusHalf: return run(Fn<PowCase::MinusHalf, T>{c, cm1});
    case PowCase::MinusOne: return run(Fn<PowCase::MinusOne, T>{c, cm1});
    case PowCase::General: return run(Fn<PowCase::General, T>{c, cm1});
  }
}

// A bound for an integer clamp: ±inf (an absent bound) saturates.
template <class T>
T int_bound(double v) {
  if (v <= double(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
  if (v >= double(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
  return T(v);
}

// run(f) with the forward functor of op for element type T. Integer types
// have neg, abs, relu and clamp (unary.cpp checks before any kernel runs).
template <class T, class Run>
void with_unary_forward(UnaryOp op, const UnaryParams& p, Run&& run) {
  if constexpr (std::is_integral_v<T>) {
    switch (op) {
      case UnaryOp::Neg: return run(UnaryForward<UnaryOp::Neg, T>{});
      case UnaryOp::Abs: return run(UnaryForward<UnaryOp::Abs, T>{});
      case UnaryOp::Relu: return run(UnaryForward<UnaryOp::Relu, T>{});
      case UnaryOp::Clamp: return run(UnaryForward<UnaryOp::Clamp, T>{int_bound<T>(p.a), int_bound<T>(p.b)});
      default: KS_ASSERT(false);
    }
  } else {
    const T a = T(p.a), b = T(p.b);
    switch (op) {
      case UnaryOp::Neg: return run(UnaryForward<UnaryOp::Neg, T>{a, b});
      case UnaryOp::Exp: return run(UnaryForward<UnaryOp::Exp, T>{a, b});
      case UnaryOp::Log: return run(UnaryForward<UnaryOp::Log, T>{a, b});
      case UnaryOp::Sqrt: return run(UnaryForward<UnaryOp::Sqrt, T>{a, b});
      case UnaryOp::Rsqrt: return run(UnaryForward<UnaryOp::Rsqrt, T>{a, b});
      case UnaryOp::Abs: return run(UnaryForward<UnaryOp::Abs, T>{a, b});
      case UnaryOp::Tanh: return run(UnaryForward<UnaryOp::Tanh, T>{a, b});
      case UnaryOp::Sigmoid: return run(UnaryForward<UnaryOp::Sigmoid, T>{a, b});
      case UnaryOp::Relu: return run(UnaryForward<UnaryOp::Relu, T>{a, b});
      case UnaryOp::Silu: return run(UnaryForward<UnaryOp::Silu, T>{a, b});
      case UnaryOp::Gelu: return run(UnaryForward<UnaryOp::Gelu, T>{a, b});
      case UnaryOp::GeluTanh: return run(UnaryForward<UnaryOp::GeluTanh, T>{a, b});
      case UnaryOp::Elu: return run(UnaryForward<UnaryOp::Elu, T>{a, b});
      case UnaryOp::Clamp: return run(UnaryForward<UnaryOp::Clamp, T>{a, b});
      case UnaryOp::Pow: return with_pow<PowForward, T>(p.a, run);
    }
    KS_ASSERT(false);
  }
}

// run(f) with the backward functor of op (floating T; neg's backward is neg
// and never reaches a kernel).
template <class T, class Run>
void with_unary_backward(UnaryOp op, const UnaryParams& p, Run&& run) {
  const T a = T(p.a), b = T(p.b);
  switch (op) {
    case UnaryOp::Exp: return run(UnaryBackward<UnaryOp::Exp, T>{a, b});
    case UnaryOp::Log: return run(UnaryBackward<UnaryOp::Log, T>{a, b});
    case UnaryOp::Sqrt: return run(UnaryBackward<UnaryOp::Sqrt, T>{a, b});
    case UnaryOp::Rsqrt: return run(UnaryBackward<UnaryOp::Rsqrt, T>{a, b});
    case UnaryOp::Abs: return run(UnaryBackward<UnaryOp::Abs, T>{a, b});
    case UnaryOp::Tanh: return run(UnaryBackward<UnaryOp::Tanh, T>{a, b});
    case UnaryOp::Sigmoid: return run(UnaryBackward<UnaryOp::Sigmoid, T>{a, b});
    case UnaryOp::Relu: return run(UnaryBackward<UnaryOp::Relu, T>{a, b});
    case UnaryOp::Silu: return run(UnaryBackward<UnaryOp::Silu, T>{a, b});
    case UnaryOp::Gelu: return run(UnaryBackward<UnaryOp::Gelu, T>{a, b});
    case UnaryOp::GeluTanh: return run(UnaryBackward<UnaryOp::GeluTanh, T>{a, b});
    case UnaryOp::Elu: return run(UnaryBackward<UnaryOp::Elu, T>{a, b});
    case UnaryOp::Clamp: return run(UnaryBackward<UnaryOp::Clamp, T>{a, b});
    case UnaryOp::Pow: return with_pow<PowBackward, T>(p.a, run);
    case UnaryOp::Neg: break;
  }
  KS_ASSERT(false);
}

// The unary kernel of ops/unary.h for the backend whose loop is Loops.
template <class Loops>
void unary_forward(UnaryOp op, const UnaryParams& p, const Tensor& out, const Tensor& x) {
  dispatch_numeric(out.dtype(), "unary op", [&](auto tag) {
    using T = typename decltype(tag)::type;
    with_unary_forward<T>(op, p, [&](auto f) { Loops::template map<T, T>(f, out, {x}); });
  });
}

// The unary backward kernel of ops/unary.h for the backend whose loop is Loops.
template <class Loops>
void unary_backward(UnaryOp op, const UnaryParams& p, const Tensor& gi, const Tensor& go, const Tensor& s) {
  dispatch_floating(gi.dtype(), "unary backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    with_unary_backward<T>(op, p, [&](auto f) { Loops::template map<T, T, T>(f, gi, {go, s}); });
  });
}

// Registers unary_forward/unary_backward<Loops> as `device`'s kernels of ops/unary.h.
template <class Loops>
bool register_unary_kernels(DeviceType device) {
  unary_kernel.set(device, unary_forward<Loops>);
  unary_backward_kernel.set(device, unary_backward<Loops>);
  return true;
}

}  // namespace ks::unary_formulas
