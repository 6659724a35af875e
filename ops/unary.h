// ops/unary.h — elementwise math of one tensor: the ops of ops/unary_formulas.h
// (one line each below), gelu's two forms, elu, clamp and pow(x, exponent).
//
// Every op keeps x's shape (any layout; the result is contiguous), dtype and
// device. Dtypes: the ops whose descriptor says `integers` (neg, abs, relu,
// clamp) accept float32, float64, int64 and int32; the rest float32/float64.
//
// Backward runs one fused kernel per op (grad_in = grad_out * f'(x) in a single
// pass), reading the saved output or input as the descriptor's `saves` says.
// Under create_graph that kernel's result is itself a recorded op,
// "<node>Backward" (e.g. ExpBackwardBackward), whose backward runs df and ddf
// kernels: second derivatives of every op; a third raises an error naming it.
// float32 exp, log, tanh and erf (and so the ops built on them) use the
// vectorised approximations of ops/vec_math.h (relative error < 1e-6).
//
// Adding a unary op: ops/README.md ("Adding an elementwise op").
// Not here: binary arithmetic (elementwise.h); in-place forms (inplace.h).
#pragma once

#include <optional>

#include "core/dispatch.h"
#include "core/tensor.h"
#include "ops/unary_formulas.h"

namespace ks {

// Parameters of the parametrised ops (UnaryArgs in unary_formulas.h): elu
// a = alpha; clamp a = min, b = max (±inf when absent); pow a = c, b = c - 1.
struct UnaryParams {
  double a = 0, b = 0;
};

// --- kernels: one table per op of UnaryOps, filled by ops/unary_kernels.h ---
// out = f(x), same shape; out may be x itself (in-place forms).
using UnaryKernel = void(const UnaryParams& p, const Tensor& out, const Tensor& x);
template <class Op> constinit inline KernelTable<UnaryKernel> unary_kernel("unary");
// grad_in = grad_out * f'(x), same shape, with `saved` x or f(x) as Op::saves says.
using UnaryBackwardKernel = void(const UnaryParams& p, const Tensor& grad_in, const Tensor& grad_out,
                                 const Tensor& saved);
template <class Op> constinit inline KernelTable<UnaryBackwardKernel> unary_backward_kernel("unary_backward");
// grad_saved = ddf(grad_grad * grad_out, saved): the backward's derivative with
// respect to `saved`, for a backward that is differentiated (create_graph).
using UnaryDoubleBackwardKernel = void(const UnaryParams& p, const Tensor& grad_saved, const Tensor& grad_grad,
                                       const Tensor& grad_out, const Tensor& saved);
template <class Op>
constinit inline KernelTable<UnaryDoubleBackwardKernel> unary_double_backward_kernel("unary_double_backward");

// What unary<Op> hands to the one non-template forward (unary.cpp).
struct UnaryInfo : OpInfo<UnaryKernel, UnaryBackwardKernel> {
  const KernelTable<UnaryDoubleBackwardKernel>& double_backward;
};
Tensor unary_apply(const UnaryInfo& op, const Tensor& x, const UnaryParams& p);

// f(x) for the descriptor Op, checked, with its backward recorded.
template <class Op> Tensor unary(const Tensor& x, const UnaryParams& p = {}) {
  return unary_apply({{Op::name, Op::node, Op::integers, Op::saves, unary_kernel<Op>, unary_backward_kernel<Op>},
                      unary_double_backward_kernel<Op>},
                     x, p);
}

inline Tensor neg(const Tensor& x) { return unary<unary_ops::Neg>(x); }
inline Tensor exp(const Tensor& x) { return unary<unary_ops::Exp>(x); }
inline Tensor log(const Tensor& x) { return unary<unary_ops::Log>(x); }
inline Tensor sqrt(const Tensor& x) { return unary<unary_ops::Sqrt>(x); }
inline Tensor rsqrt(const Tensor& x) { return unary<unary_ops::Rsqrt>(x); }
inline Tensor abs(const Tensor& x) { return unary<unary_ops::Abs>(x); }
inline Tensor tanh(const Tensor& x) { return unary<unary_ops::Tanh>(x); }
inline Tensor sigmoid(const Tensor& x) { return unary<unary_ops::Sigmoid>(x); }
inline Tensor relu(const Tensor& x) { return unary<unary_ops::Relu>(x); }
inline Tensor silu(const Tensor& x) { return unary<unary_ops::Silu>(x); }

enum class GeluApprox { None, Tanh };
// None: x * Φ(x) with the exact erf; Tanh: 0.5 x (1 + tanh(√(2/π) (x + 0.044715 x³))).
Tensor gelu(const Tensor& x, GeluApprox approx = GeluApprox::None);
// x for x > 0, alpha (exp(x) - 1) otherwise.
Tensor elu(const Tensor& x, double alpha = 1.0);
// Limits x to [min, max]; either bound may be absent (std::nullopt or {}), not
// both; min <= max. The gradient passes where min <= x <= max and is 0 outside.
// NaN stays NaN. With an integer tensor the bounds must be integers.
Tensor clamp(const Tensor& x, std::optional<double> min, std::optional<double> max);
// x ** exponent; gradient exponent * x ** (exponent - 1) (0 for exponent 0).
Tensor pow(const Tensor& x, double exponent);

inline Tensor operator-(const Tensor& x) { return neg(x); }

// Checks clamp's bounds against x (as `op`) and packs them; shared with clamp_.
UnaryParams clamp_params(const char* op, const Tensor& x, std::optional<double> min, std::optional<double> max);

}  // namespace ks
