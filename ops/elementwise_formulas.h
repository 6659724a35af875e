// ops/elementwise_formulas.h — the kernels of the binary and scalar
// elementwise ops, of the fused backwards of div, pow, maximum and minimum
// (ops/elementwise.h) and of the fused in-place updates add_(alpha),
// addcmul_, addcdiv_ (ops/inplace.h), written once for the CPU and the GPU.
//
// Each formula is a functor with a KS_HOST_DEVICE call operator; each kernel
// is a template over the backend's elementwise loop (Loops::map: cpu_map for
// CpuLoops, cuda_map for CudaLoops), which runs it over any strides and
// broadcast views. The backends' files only register the kernels
// (register_elementwise_kernels).
// Dtypes were checked by the ops; a dtype reaching a branch it cannot run is
// an internal error. pow has no vectorised form (libm's pow per element).
// In-place updates pass the target as both output and first input: each
// element reads and writes only itself, and ops/inplace.cpp has already
// copied any operand that partially overlaps it.
// Not here: checks, broadcasting and autograd (elementwise.cpp, inplace.cpp).
#pragma once

#include <type_traits>

#include "core/dtype.h"
#include "core/error.h"
#include "core/tensor.h"
#include "ops/elementwise.h"
#include "ops/inplace.h"
#include "ops/kernel_math.h"

namespace ks::elementwise_formulas {

template <BinaryOp Op, class T>
struct Binary {
  KS_HOST_DEVICE T operator()(T x, T y) const {
    if constexpr (Op == BinaryOp::Add) return T(x + y);
    else if constexpr (Op == BinaryOp::Sub) return T(x - y);
    else if constexpr (Op == BinaryOp::Mul) return T(x * y);
    else if constexpr (Op == BinaryOp::Div) return T(x / y);
    else if constexpr (Op == BinaryOp::Pow) return kmath::pow(x, y);
    else if constexpr (Op == BinaryOp::Maximum) return (x > y || x != x) ? x : y;  // NaN in either operand wins
    else return (x < y || x != x) ? x : y;                                           // Minimum
  }
};

// x (op) c, c on the right but for RSub (c - x) and RDiv (c / x).
template <ScalarOp Op, class T>
struct WithScalar {
  T c;
  KS_HOST_DEVICE T operator()(T v) const {
    if constexpr (Op == ScalarOp::Add) return T(v + c);
    else if constexpr (Op == ScalarOp::Mul) return T(v * c);
    else if constexpr (Op == ScalarOp::RSub) return T(c - v);
    else return T(c / v);  // RDiv
  }
};

// The gradient of a/b with respect to a (g / b) and to b (-g a / b²).
template <class T>
struct DivGradA {
  KS_HOST_DEVICE T operator()(T g, T y) const { return g / y; }
};
template <class T>
struct DivGradB {
  KS_HOST_DEVICE T operator()(T g, T x, T y) const { return -g * x / (y * y); }
};

// The gradient of x^y with respect to x (g y x^(y-1), 0 for y = 0) and to y
// (g x^y log x; log 0 = -inf would give 0 · -inf, and the limit of
// x^y log x is 0 for y > 0).
template <class T>
struct PowGradBase {
  KS_HOST_DEVICE T operator()(T g, T x, T y) const {
    return y == T(0) ? T(0) : T(g * y * kmath::pow(x, y - T(1)));
  }
};
template <class T>
struct PowGradExponent {
  KS_HOST_DEVICE T operator()(T g, T x, T y) const {
    return (x == T(0) && y >= T(0)) ? T(0) : T(g * kmath::pow(x, y) * kmath::log(x));
  }
};

// maximum/minimum for input x against y: g goes to x where it won (x > y for
// Greater, x < y otherwise) and is split where they tie.
template <class T, bool Greater>
struct ExtremeGrad {
  KS_HOST_DEVICE T operator()(T g, T x, T y) const {
    const bool won = Greater ? x > y : x < y;
    return won ? g : (x == y ? T(g * T(0.5)) : T(0));
  }
};

template <InplaceOp Op, class T>
struct Inplace {
  T c;  // alpha
  KS_HOST_DEVICE T operator()(T x, T y) const { return T(x + c * y); }  // AddScaled
  KS_HOST_DEVICE T operator()(T x, T p, T q) const {
    if constexpr (Op == InplaceOp::Addcmul) return x + c * p * q;
    else return x + c * p / q;  // Addcdiv
  }
};

// The kernels of ops/elementwise.h and ops/inplace.h for the backend whose
// loop is Loops.
template <class Loops>
struct elementwise_kernels {
  static void binary(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b) {
    dispatch_numeric(out.dtype(), "binary op", [&](auto tag) {
      using T = typename decltype(tag)::type;
      auto run = [&](auto f) { Loops::template map<T, T, T>(f, out, {a, b}); };
      switch (op) {
        case BinaryOp::Add: return run(Binary<BinaryOp::Add, T>{});
        case BinaryOp::Sub: return run(Binary<BinaryOp::Sub, T>{});
        case BinaryOp::Mul: return run(Binary<BinaryOp::Mul, T>{});
        case BinaryOp::Maximum: return run(Binary<BinaryOp::Maximum, T>{});
        case BinaryOp::Minimum: return run(Binary<BinaryOp::Minimum, T>{});
        case BinaryOp::Div:
          if constexpr (std::is_floating_point_v<T>) return run(Binary<BinaryOp::Div, T>{});
          break;
        case BinaryOp::Pow:
          if constexpr (std::is_floating_point_v<T>) return run(Binary<BinaryOp::Pow, T>{});
          break;
      }
      KS_ASSERT(false);
    });
  }

  static void scalar(ScalarOp op, double s, const Tensor& out, const Tensor& x) {
    dispatch_numeric(out.dtype(), "scalar op", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T c = static_cast<T>(s);
      auto run = [&](auto f) { Loops::template map<T, T>(f, out, {x}); };
      switch (op) {
        case ScalarOp::Add: return run(WithScalar<ScalarOp::Add, T>{c});
        case ScalarOp::Mul: return run(WithScalar<ScalarOp::Mul, T>{c});
        case ScalarOp::RSub: return run(WithScalar<ScalarOp::RSub, T>{c});
        case ScalarOp::RDiv:
          if constexpr (std::is_floating_point_v<T>) return run(WithScalar<ScalarOp::RDiv, T>{c});
          break;
      }
      KS_ASSERT(false);
    });
  }

  // The gradient for input `which` (0: a, 1: b).
  static void binary_backward(BinaryOp op, int which, const Tensor& gi, const Tensor& go, const Tensor& a,
                              const Tensor& b) {
    dispatch_floating(gi.dtype(), "binary backward", [&](auto tag) {
      using T = typename decltype(tag)::type;
      auto run3 = [&](auto f) { Loops::template map<T, T, T, T>(f, gi, {go, a, b}); };
      switch (op) {
        case BinaryOp::Div:
          if (which == 0) return Loops::template map<T, T, T>(DivGradA<T>{}, gi, {go, b});
          return run3(DivGradB<T>{});
        case BinaryOp::Pow:
          if (which == 0) return run3(PowGradBase<T>{});
          return run3(PowGradExponent<T>{});
        case BinaryOp::Maximum:
        case BinaryOp::Minimum:
          if ((op == BinaryOp::Maximum) == (which == 0)) return run3(ExtremeGrad<T, true>{});
          return run3(ExtremeGrad<T, false>{});
        case BinaryOp::Add:
        case BinaryOp::Sub:
        case BinaryOp::Mul: break;
      }
      KS_ASSERT(false);
    });
  }

  static void inplace(InplaceOp op, double alpha, const Tensor& t, const Tensor& a, const Tensor& b) {
    dispatch_numeric(t.dtype(), "inplace", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T c = static_cast<T>(alpha);
      switch (op) {
        case InplaceOp::AddScaled:
          return Loops::template map<T, T, T>(Inplace<InplaceOp::AddScaled, T>{c}, t, {t, a});
        case InplaceOp::Addcmul:
          if constexpr (std::is_floating_point_v<T>)
            return Loops::template map<T, T, T, T>(Inplace<InplaceOp::Addcmul, T>{c}, t, {t, a, b});
          break;
        case InplaceOp::Addcdiv:
          if constexpr (std::is_floating_point_v<T>)
            return Loops::template map<T, T, T, T>(Inplace<InplaceOp::Addcdiv, T>{c}, t, {t, a, b});
          break;
      }
      KS_ASSERT(false);
    });
  }
};

// Registers elementwise_kernels<Loops> as `device`'s kernels of
// ops/elementwise.h and ops/inplace.h.
template <class Loops>
bool register_elementwise_kernels(DeviceType device) {
  using K = elementwise_kernels<Loops>;
  binary_kernel.set(device, K::binary);
  scalar_kernel.set(device, K::scalar);
  binary_backward_kernel.set(device, K::binary_backward);
  inplace_kernel.set(device, K::inplace);
  return true;
}

}  // namespace ks::elementwise_formulas
