// ops/elementwise_formulas.h — the binary elementwise ops, their scalar
// forms and the fused in-place updates, one descriptor each: its name, the
// dtypes it takes, f, and the derivatives da and db right under it where the
// backward is a fused kernel, with the second derivatives daa, dab, dbb under
// those. BinaryOps, ScalarOps and InplaceOps list them.
//
//   struct Op {                              // binary: ops/elementwise.h
//     static constexpr const char* name, *node;
//     static constexpr bool integers;      // also int64/int32 (else float32/float64 only)
//     template <class T> KS_HOST_DEVICE static T f(T x, T y);
//     template <class T> KS_HOST_DEVICE static T da(T g, T x, T y);   // g · ∂f/∂x (or da(g, y): reads y only)
//     template <class T> KS_HOST_DEVICE static T db(T g, T x, T y);   // g · ∂f/∂y
//     template <class T> KS_HOST_DEVICE static T daa(T g, T x, T y);  // g · ∂²f/∂x²
//     template <class T> KS_HOST_DEVICE static T dab(T g, T x, T y);  // g · ∂²f/∂x∂y
//     template <class T> KS_HOST_DEVICE static T dbb(T g, T x, T y);  // g · ∂²f/∂y²
//   };
//   scalar:   f(T x, T c), c the number;   in-place: f(T t, T a [, T b], T c), c = alpha
//
// An op with da and db gets the generic backward (ops/elementwise.h's
// binary<Op>: both inputs saved, one fused kernel per input), and must have
// daa, dab and dbb too (binary<Op> does not compile without them): a backward
// with create_graph differentiates da and db through them. add, sub, mul and
// div write theirs in elementwise.cpp, where it is a composition of ops (so
// differentiable again) or saves less. The kernels (elementwise_kernels.h) run f, da, db in the CPU's
// loop and the GPU's alike. Dtypes were checked by the ops. pow has no
// vectorised form (libm's pow per element).
// Not here: checks, broadcasting and autograd (elementwise.cpp, inplace.cpp).
#pragma once

#include "core/host_device.h"
#include "ops/kernel_math.h"
#include "ops/op_list.h"

namespace ks::binary_ops {

struct BinaryOp {
  static constexpr bool integers = true;
};

struct Add : BinaryOp {
  static constexpr const char *name = "add", *node = "AddBackward";
  template <class T> KS_HOST_DEVICE static T f(T x, T y) { return T(x + y); }
};

struct Sub : BinaryOp {
  static constexpr const char *name = "sub", *node = "SubBackward";
  template <class T> KS_HOST_DEVICE static T f(T x, T y) { return T(x - y); }
};

struct Mul : BinaryOp {
  static constexpr const char *name = "mul", *node = "MulBackward";
  template <class T> KS_HOST_DEVICE static T f(T x, T y) { return T(x * y); }
};

struct Div : BinaryOp {
  static constexpr const char *name = "div", *node = "DivBackward";
  static constexpr bool integers = false;
  template <class T> KS_HOST_DEVICE static T f(T x, T y) { return T(x / y); }
  template <class T> KS_HOST_DEVICE static T da(T g, T y) { return g / y; }
  template <class T> KS_HOST_DEVICE static T db(T g, T x, T y) { return -g * x / (y * y); }
};

// x^y; ∂/∂x = y x^(y-1) (0 for y = 0); ∂/∂y = x^y log x, where log 0 = -inf
// would give 0 · -inf, and the limit of x^y log x is 0 for y > 0.
struct Pow : BinaryOp {
  static constexpr const char *name = "pow", *node = "PowBackward";
  static constexpr bool integers = false;
  template <class T> KS_HOST_DEVICE static T f(T x, T y) { return kmath::pow(x, y); }
  template <class T> KS_HOST_DEVICE static T da(T g, T x, T y) {
    return y == T(0) ? T(0) : T(g * y * kmath::pow(x, y - T(1)));
  }
  template <class T> KS_HOST_DEVICE static T db(T g, T x, T y) {
    return (x == T(0) && y >= T(0)) ? T(0) : T(g * kmath::pow(x, y) * kmath::log(x));
  }
  // y (y - 1) x^(y-2), exactly 0 where x^y is constant or linear in x.
  template <class T> KS_HOST_DEVICE static T daa(T g, T x, T y) {
    return (y == T(0) || y == T(1)) ? T(0) : T(g * y * (y - T(1)) * kmath::pow(x, y - T(2)));
  }
  // x^(y-1) (1 + y log x), whose limit at x = 0 is 0 for y > 1.
  template <class T> KS_HOST_DEVICE static T dab(T g, T x, T y) {
    return (x == T(0) && y > T(1)) ? T(0) : T(g * kmath::pow(x, y - T(1)) * (T(1) + y * kmath::log(x)));
  }
  // x^y log² x, 0 at x = 0 as db is.
  template <class T> KS_HOST_DEVICE static T dbb(T g, T x, T y) {
    const T l = kmath::log(x);
    return (x == T(0) && y >= T(0)) ? T(0) : T(g * kmath::pow(x, y) * l * l);
  }
};

// maximum/minimum's gradient for one input: g where it won, half of g where
// the two tie (a valid subgradient, symmetric in a and b), else 0.
template <class T> KS_HOST_DEVICE T winner_grad(T g, bool won, bool tie) {
  return won ? g : (tie ? T(g * T(0.5)) : T(0));
}

// maximum/minimum's second derivatives: the gradient is a piecewise constant
// mask, flat off the ties.
struct PiecewiseLinear : BinaryOp {
  template <class T> KS_HOST_DEVICE static T daa(T, T, T) { return T(0); }
  template <class T> KS_HOST_DEVICE static T dab(T, T, T) { return T(0); }
  template <class T> KS_HOST_DEVICE static T dbb(T, T, T) { return T(0); }
};

struct Maximum : PiecewiseLinear {  // NaN in either operand wins
  static constexpr const char *name = "maximum", *node = "MaximumBackward";
  template <class T> KS_HOST_DEVICE static T f(T x, T y) { return (x > y || x != x) ? x : y; }
  template <class T> KS_HOST_DEVICE static T da(T g, T x, T y) { return winner_grad(g, x > y, x == y); }
  template <class T> KS_HOST_DEVICE static T db(T g, T x, T y) { return winner_grad(g, x < y, x == y); }
};

struct Minimum : PiecewiseLinear {
  static constexpr const char *name = "minimum", *node = "MinimumBackward";
  template <class T> KS_HOST_DEVICE static T f(T x, T y) { return (x < y || x != x) ? x : y; }
  template <class T> KS_HOST_DEVICE static T da(T g, T x, T y) { return winner_grad(g, x < y, x == y); }
  template <class T> KS_HOST_DEVICE static T db(T g, T x, T y) { return winner_grad(g, x > y, x == y); }
};

// x (op) c for a number c: c on the right but for RSub (c - x) and RDiv (c / x).
struct AddScalar : BinaryOp {
  template <class T> KS_HOST_DEVICE static T f(T x, T c) { return T(x + c); }
};
struct MulScalar : BinaryOp {
  template <class T> KS_HOST_DEVICE static T f(T x, T c) { return T(x * c); }
};
struct RSubScalar : BinaryOp {
  template <class T> KS_HOST_DEVICE static T f(T x, T c) { return T(c - x); }
};
struct RDivScalar : BinaryOp {
  static constexpr bool integers = false;
  template <class T> KS_HOST_DEVICE static T f(T x, T c) { return T(c / x); }
};

// In-place updates of t (ops/inplace.h), c = alpha.
struct AddScaled : BinaryOp {  // t + c a
  template <class T> KS_HOST_DEVICE static T f(T t, T a, T c) { return T(t + c * a); }
};
struct Addcmul : BinaryOp {  // t + c a b
  static constexpr bool integers = false;
  template <class T> KS_HOST_DEVICE static T f(T t, T a, T b, T c) { return t + c * a * b; }
};
struct Addcdiv : BinaryOp {  // t + c a / b
  static constexpr bool integers = false;
  template <class T> KS_HOST_DEVICE static T f(T t, T a, T b, T c) { return t + c * a / b; }
};

}  // namespace ks::binary_ops

namespace ks {

// Every op of each kind: each backend registers these lists, the tests cover them.
using BinaryOps = OpList<binary_ops::Add, binary_ops::Sub, binary_ops::Mul, binary_ops::Div, binary_ops::Pow,
                         binary_ops::Maximum, binary_ops::Minimum>;
using ScalarOps = OpList<binary_ops::AddScalar, binary_ops::MulScalar, binary_ops::RSubScalar, binary_ops::RDivScalar>;
using InplaceOps = OpList<binary_ops::AddScaled, binary_ops::Addcmul, binary_ops::Addcdiv>;

}  // namespace ks
