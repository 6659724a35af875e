// ops/unary_formulas.h — the unary ops, one descriptor each: its name, the
// name of its backward node, what the backward saves, whether integer tensors
// take it, and f with its derivative df and df's own derivative ddf right
// under it. UnaryOps lists them.
//
//   struct Op {
//     static constexpr const char* name, *node;
//     static constexpr Saves saves;       // (op_list.h) Input: df reads x; Output: y = f(x)
//     static constexpr bool integers;     // also int64/int32 (else float32/float64 only)
//     template <class T> KS_HOST_DEVICE static T f(T x [, UnaryArgs<T> p]);
//     template <class T> KS_HOST_DEVICE static T df(T g, T saved [, UnaryArgs<T> p]);  // g · f'(x)
//     template <class T> KS_HOST_DEVICE static T ddf(T g, T saved [, UnaryArgs<T> p]); // ∂df(g, s)/∂s
//   };
//
// df is linear in g, df(g, s) = g · h(s), so ddf(g, s) = g · h'(s): the
// derivative with respect to what is saved, x or (Saves::Output) y = f(x),
// whose own history carries the chain on to x. It is what a backward with
// create_graph differentiates (unary.cpp); an op without ddf does not compile,
// so a second derivative is never a silent zero. A Saves::Self op has neither.
// A Saves::Activation op (gelu, silu) saves x, rounded to bf16 under bf16
// precision (ops/op_list.h); df then sees the rounded x, widened.
//
// f and df are KS_HOST_DEVICE, so the CPU's loop and the GPU's run the same
// code (ops/unary_kernels.h instantiates both for every op of UnaryOps); the
// public functions are one line each in ops/unary.h. Selects are written
// `cond ? a : b` over values computed either way, so the CPU loops become
// blends, not branches. Math functions are ks::kmath's (ops/kernel_math.h):
// vec_math.h on the CPU, CUDA's libm on the GPU. A product added to or
// subtracted from something is written kmath::fma where GCC's Release build
// fused it, so a test, a Debug or a clang build computes the same bits
// (tests/ops/test_unary.cpp); a product that is only multiplied stays `*`.
// Not here: argument checks and autograd (unary.cpp), the loops (backends).
#pragma once

#include "core/host_device.h"
#include "ops/kernel_math.h"
#include "ops/op_list.h"

namespace ks {

// The parameters of the parametrised ops (ops/unary.h's UnaryParams) in the
// element type: elu a = alpha; clamp a = min, b = max; pow a = c, b = c - 1.
template <class T> struct UnaryArgs { T a, b; };

}  // namespace ks

namespace ks::unary_ops {

constexpr double kSqrt2OverPi = 0.79788456080286535588;  // √(2/π)
constexpr double kInvSqrt2Pi = 0.39894228040143267794;   // 1/√(2π)
constexpr double kSqrtHalf = 0.70710678118654752440;     // 1/√2
constexpr double kGeluTanhC = 0.044715;

// The defaults a descriptor inherits.
struct UnaryOp {
  static constexpr Saves saves = Saves::Input;
  static constexpr bool integers = false;
};

struct Neg : UnaryOp {
  static constexpr const char *name = "neg", *node = "NegBackward";
  static constexpr Saves saves = Saves::Self;
  static constexpr bool integers = true;
  template <class T> KS_HOST_DEVICE static T f(T x) { return T(-x); }
};

struct Exp : UnaryOp {
  static constexpr const char *name = "exp", *node = "ExpBackward";
  static constexpr Saves saves = Saves::Output;
  template <class T> KS_HOST_DEVICE static T f(T x) { return kmath::exp(x); }
  template <class T> KS_HOST_DEVICE static T df(T g, T y) { return g * y; }
  template <class T> KS_HOST_DEVICE static T ddf(T g, T) { return g; }
};

struct Log : UnaryOp {
  static constexpr const char *name = "log", *node = "LogBackward";
  template <class T> KS_HOST_DEVICE static T f(T x) { return kmath::log(x); }
  template <class T> KS_HOST_DEVICE static T df(T g, T x) { return g / x; }
  template <class T> KS_HOST_DEVICE static T ddf(T g, T x) { return -g / (x * x); }
};

struct Sqrt : UnaryOp {
  static constexpr const char *name = "sqrt", *node = "SqrtBackward";
  static constexpr Saves saves = Saves::Output;
  template <class T> KS_HOST_DEVICE static T f(T x) { return kmath::sqrt(x); }
  template <class T> KS_HOST_DEVICE static T df(T g, T y) { return T(0.5) * g / y; }
  template <class T> KS_HOST_DEVICE static T ddf(T g, T y) { return T(-0.5) * g / (y * y); }
};

struct Rsqrt : UnaryOp {  // 1 / sqrt(x)
  static constexpr const char *name = "rsqrt", *node = "RsqrtBackward";
  static constexpr Saves saves = Saves::Output;
  template <class T> KS_HOST_DEVICE static T f(T x) { return T(1) / kmath::sqrt(x); }
  template <class T> KS_HOST_DEVICE static T df(T g, T y) { return T(-0.5) * g * y * y * y; }
  template <class T> KS_HOST_DEVICE static T ddf(T g, T y) { return T(-1.5) * g * y * y; }
};

struct Abs : UnaryOp {  // gradient sign(x), 0 at 0
  static constexpr const char *name = "abs", *node = "AbsBackward";
  static constexpr bool integers = true;
  template <class T> KS_HOST_DEVICE static T f(T x) { return x < T(0) ? T(-x) : x; }
  template <class T> KS_HOST_DEVICE static T df(T g, T x) { return x > T(0) ? g : (x < T(0) ? -g : T(0)); }
  template <class T> KS_HOST_DEVICE static T ddf(T, T) { return T(0); }  // sign(x) is flat off the kink
};

struct Tanh : UnaryOp {
  static constexpr const char *name = "tanh", *node = "TanhBackward";
  static constexpr Saves saves = Saves::Output;
  template <class T> KS_HOST_DEVICE static T f(T x) { return kmath::tanh(x); }
  template <class T> KS_HOST_DEVICE static T df(T g, T y) { return g * kmath::fma(-y, y, T(1)); }
  template <class T> KS_HOST_DEVICE static T ddf(T g, T y) { return T(-2) * g * y; }
};

struct Sigmoid : UnaryOp {
  static constexpr const char *name = "sigmoid", *node = "SigmoidBackward";
  static constexpr Saves saves = Saves::Output;
  template <class T> KS_HOST_DEVICE static T f(T x) { return kmath::sigmoid(x); }
  template <class T> KS_HOST_DEVICE static T df(T g, T y) { return g * y * (T(1) - y); }
  template <class T> KS_HOST_DEVICE static T ddf(T g, T y) { return g * kmath::fma(T(-2), y, T(1)); }
};

struct Relu : UnaryOp {  // gradient 0 at 0; NaN stays NaN
  static constexpr const char *name = "relu", *node = "ReluBackward";
  static constexpr Saves saves = Saves::Output;
  static constexpr bool integers = true;
  template <class T> KS_HOST_DEVICE static T f(T x) { return x < T(0) ? T(0) : x; }
  template <class T> KS_HOST_DEVICE static T df(T g, T y) { return y > T(0) ? g : T(0); }
  template <class T> KS_HOST_DEVICE static T ddf(T, T) { return T(0); }  // a step: flat off the kink
};

struct Silu : UnaryOp {  // x · sigmoid(x)
  static constexpr const char *name = "silu", *node = "SiluBackward";
  static constexpr Saves saves = Saves::Activation;
  template <class T> KS_HOST_DEVICE static T f(T x) { return x * kmath::sigmoid(x); }
  template <class T> KS_HOST_DEVICE static T df(T g, T x) {
    const T sg = kmath::sigmoid(x);
    return g * sg * kmath::fma(x, T(1) - sg, T(1));
  }
  template <class T> KS_HOST_DEVICE static T ddf(T g, T x) {  // σ(1 - σ)(2 + x(1 - 2σ))
    const T sg = kmath::sigmoid(x);
    return g * sg * (T(1) - sg) * kmath::fma(x, kmath::fma(T(-2), sg, T(1)), T(2));
  }
};

// Its multiply-adds are kmath::fma (ops/kernel_math.h): 0.5(1 + erf) cancels
// near x = -4, where a fused or unfused cdf + x·pdf differ in the leading
// digits, and the same formula compiled in a test or a Debug build gave other
// bits than the kernel's.
struct Gelu : UnaryOp {  // x Φ(x), with the exact erf
  static constexpr const char *name = "gelu", *node = "GeluBackward";
  static constexpr Saves saves = Saves::Activation;
  template <class T> KS_HOST_DEVICE static T f(T x) { return T(0.5) * x * (T(1) + kmath::erf(x * T(kSqrtHalf))); }
  template <class T> KS_HOST_DEVICE static T df(T g, T x) {
    const T cdf = T(0.5) * (T(1) + kmath::erf(x * T(kSqrtHalf)));
    const T pdf = T(kInvSqrt2Pi) * kmath::exp(T(-0.5) * x * x);
    return g * kmath::fma(x, pdf, cdf);  // Φ + x φ
  }
  template <class T> KS_HOST_DEVICE static T ddf(T g, T x) {  // φ' = -x φ, so (Φ + x φ)' = φ (2 - x²)
    const T pdf = T(kInvSqrt2Pi) * kmath::exp(T(-0.5) * x * x);
    return g * pdf * kmath::fma(-x, x, T(2));
  }
};

struct GeluTanh : UnaryOp {  // 0.5 x (1 + tanh(√(2/π) (x + 0.044715 x³)))
  static constexpr const char *name = "gelu", *node = "GeluTanhBackward";
  static constexpr Saves saves = Saves::Activation;
  template <class T> KS_HOST_DEVICE static T f(T x) {
    const T u = T(kSqrt2OverPi) * kmath::fma(T(kGeluTanhC) * x * x, x, x);
    return T(0.5) * x * (T(1) + kmath::tanh(u));
  }
  template <class T> KS_HOST_DEVICE static T df(T g, T x) {
    const T x2 = x * x;
    const T t = kmath::tanh(T(kSqrt2OverPi) * x * kmath::fma(T(kGeluTanhC), x2, T(1)));
    const T du = T(kSqrt2OverPi) * kmath::fma(T(3 * kGeluTanhC), x2, T(1));
    return g * T(0.5) * kmath::fma(x * kmath::fma(-t, t, T(1)), du, T(1) + t);
  }
  // With u' = du and u'' = 6 √(2/π) 0.044715 x: ½ d/dx[(1 + t) + x (1 - t²) u']
  // = (1 - t²) (u' - x t u'² + ½ x u'').
  template <class T> KS_HOST_DEVICE static T ddf(T g, T x) {
    const T x2 = x * x;
    const T t = kmath::tanh(T(kSqrt2OverPi) * x * kmath::fma(T(kGeluTanhC), x2, T(1)));
    const T du = T(kSqrt2OverPi) * kmath::fma(T(3 * kGeluTanhC), x2, T(1));
    return g * kmath::fma(-t, t, T(1)) *
           kmath::fma(T(3 * kSqrt2OverPi * kGeluTanhC), x2, kmath::fma(-(x * t * du), du, du));
  }
};

struct Elu : UnaryOp {  // x for x > 0, alpha (exp(x) - 1) otherwise; p.a = alpha
  static constexpr const char *name = "elu", *node = "EluBackward";
  template <class T> KS_HOST_DEVICE static T f(T x, UnaryArgs<T> p) {
    const T below = p.a * kmath::expm1(x);
    return x > T(0) ? x : below;
  }
  template <class T> KS_HOST_DEVICE static T df(T g, T x, UnaryArgs<T> p) {
    const T below = g * p.a * kmath::exp(x);
    return x > T(0) ? g : below;
  }
  template <class T> KS_HOST_DEVICE static T ddf(T g, T x, UnaryArgs<T> p) {
    const T below = g * p.a * kmath::exp(x);
    return x > T(0) ? T(0) : below;
  }
};

struct Clamp : UnaryOp {  // x limited to [p.a, p.b]; the gradient passes inside, 0 outside
  static constexpr const char *name = "clamp", *node = "ClampBackward";
  static constexpr bool integers = true;
  template <class T> KS_HOST_DEVICE static T f(T x, UnaryArgs<T> p) { return x < p.a ? p.a : (x > p.b ? p.b : x); }
  template <class T> KS_HOST_DEVICE static T df(T g, T x, UnaryArgs<T> p) { return (x >= p.a && x <= p.b) ? g : T(0); }
  template <class T> KS_HOST_DEVICE static T ddf(T, T, UnaryArgs<T>) { return T(0); }  // a step: flat off the bounds
};

// x ** c, p.a = c and p.b = c - 1 (rounded once from float64). The exponents
// models use are written out so those loops vectorise; ops/unary.cpp's pow
// takes the first of PowOps whose `matches(c)` holds. ±½ share the general
// derivative's cost, so only the exponents below have a written-out one.
struct PowOp : UnaryOp {
  static constexpr const char *name = "pow", *node = "PowScalarBackward";
};
struct PowZero : PowOp {
  static constexpr bool matches(double c) { return c == 0; }
  template <class T> KS_HOST_DEVICE static T f(T, UnaryArgs<T>) { return T(1); }
  template <class T> KS_HOST_DEVICE static T df(T, T, UnaryArgs<T>) { return T(0); }
  template <class T> KS_HOST_DEVICE static T ddf(T, T, UnaryArgs<T>) { return T(0); }
};
struct PowOne : PowOp {
  static constexpr bool matches(double c) { return c == 1; }
  template <class T> KS_HOST_DEVICE static T f(T x, UnaryArgs<T>) { return x; }
  template <class T> KS_HOST_DEVICE static T df(T g, T, UnaryArgs<T>) { return g; }
  template <class T> KS_HOST_DEVICE static T ddf(T, T, UnaryArgs<T>) { return T(0); }
};
struct PowTwo : PowOp {
  static constexpr bool matches(double c) { return c == 2; }
  template <class T> KS_HOST_DEVICE static T f(T x, UnaryArgs<T>) { return x * x; }
  template <class T> KS_HOST_DEVICE static T df(T g, T x, UnaryArgs<T>) { return T(2) * g * x; }
  template <class T> KS_HOST_DEVICE static T ddf(T g, T, UnaryArgs<T>) { return T(2) * g; }
};
struct PowThree : PowOp {
  static constexpr bool matches(double c) { return c == 3; }
  template <class T> KS_HOST_DEVICE static T f(T x, UnaryArgs<T>) { return x * x * x; }
  template <class T> KS_HOST_DEVICE static T df(T g, T x, UnaryArgs<T>) { return T(3) * g * x * x; }
  template <class T> KS_HOST_DEVICE static T ddf(T g, T x, UnaryArgs<T>) { return T(6) * g * x; }
};
struct PowHalf : PowOp {
  static constexpr bool matches(double c) { return c == 0.5; }
  template <class T> KS_HOST_DEVICE static T f(T x, UnaryArgs<T>) { return kmath::sqrt(x); }
  template <class T> KS_HOST_DEVICE static T df(T g, T x, UnaryArgs<T>) { return T(0.5) * g / kmath::sqrt(x); }
  template <class T> KS_HOST_DEVICE static T ddf(T g, T x, UnaryArgs<T>) { return T(-0.25) * g / (x * kmath::sqrt(x)); }
};
struct PowMinusOne : PowOp {
  static constexpr bool matches(double c) { return c == -1; }
  template <class T> KS_HOST_DEVICE static T f(T x, UnaryArgs<T>) { return T(1) / x; }
  template <class T> KS_HOST_DEVICE static T df(T g, T x, UnaryArgs<T>) { return -g / (x * x); }
  template <class T> KS_HOST_DEVICE static T ddf(T g, T x, UnaryArgs<T>) { return T(2) * g / (x * x * x); }
};
struct PowAny : PowOp {
  static constexpr bool matches(double) { return true; }
  template <class T> KS_HOST_DEVICE static T f(T x, UnaryArgs<T> p) { return kmath::pow(x, p.a); }
  template <class T> KS_HOST_DEVICE static T df(T g, T x, UnaryArgs<T> p) { return p.a * g * kmath::pow(x, p.b); }
  template <class T> KS_HOST_DEVICE static T ddf(T g, T x, UnaryArgs<T> p) {
    return p.a * p.b * g * kmath::pow(x, p.b - T(1));
  }
};
struct PowMinusHalf : PowAny {
  static constexpr bool matches(double c) { return c == -0.5; }
  template <class T> KS_HOST_DEVICE static T f(T x, UnaryArgs<T>) { return T(1) / kmath::sqrt(x); }
};

// In the order pow tries them: PowAny, which matches every exponent, last.
using PowOps = OpList<PowZero, PowOne, PowTwo, PowThree, PowHalf, PowMinusHalf, PowMinusOne, PowAny>;

}  // namespace ks::unary_ops

namespace ks {

// Every unary op: each backend registers this list, the tests cover it.
using UnaryOps = ConcatOps<OpList<unary_ops::Neg, unary_ops::Exp, unary_ops::Log, unary_ops::Sqrt, unary_ops::Rsqrt,
                                  unary_ops::Abs, unary_ops::Tanh, unary_ops::Sigmoid, unary_ops::Relu, unary_ops::Silu,
                                  unary_ops::Gelu, unary_ops::GeluTanh, unary_ops::Elu, unary_ops::Clamp>,
                           unary_ops::PowOps>::type;

}  // namespace ks
