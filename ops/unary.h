// ops/unary.h — elementwise math of one tensor: neg, exp, log, sqrt, rsqrt,
// abs, tanh, sigmoid, relu, gelu, elu, silu, clamp, pow(x, exponent).
//
// Every op keeps x's shape (any layout; the result is contiguous), dtype and
// device. Dtypes: neg, abs, relu and clamp accept float32, float64, int64 and
// int32; the rest float32/float64 only.
//
// Backward runs one fused kernel per op (grad_in = grad_out * f'(x) in a single
// pass), reading the saved output where f' is cheapest in terms of it (exp,
// sqrt, rsqrt, tanh, sigmoid, relu) and the saved input otherwise.
// float32 exp, log, tanh, erf (and so sigmoid, silu, elu, gelu) use the
// vectorised approximations of ops/cpu/vec_math.h (relative error < 1e-6).
//
// Not here: binary arithmetic (elementwise.h); in-place forms (inplace.h).
#pragma once

#include <optional>

#include "core/dispatch.h"
#include "core/tensor.h"

namespace ks {

Tensor neg(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor rsqrt(const Tensor& x);  // 1 / sqrt(x)
Tensor abs(const Tensor& x);    // gradient sign(x), 0 at 0
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor relu(const Tensor& x);   // gradient 0 at 0
Tensor silu(const Tensor& x);   // x * sigmoid(x)

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

// --- kernels ---
enum class UnaryOp { Neg, Exp, Log, Sqrt, Rsqrt, Abs, Tanh, Sigmoid, Relu, Silu, Gelu, GeluTanh, Elu, Clamp, Pow };
// elu: a = alpha. clamp: a = min, b = max (±inf when absent). pow: a = exponent.
struct UnaryParams {
  double a = 0, b = 0;
};
// out = f(x), same shape; out may be x itself (in-place forms).
using UnaryKernel = void(UnaryOp op, const UnaryParams& p, const Tensor& out, const Tensor& x);
extern KernelTable<UnaryKernel> unary_kernel;
// grad_in = grad_out * f'(x), same shape, with `saved` the op's output for
// Exp, Sqrt, Rsqrt, Tanh, Sigmoid, Relu and its input for the others (not Neg).
using UnaryBackwardKernel = void(UnaryOp op, const UnaryParams& p, const Tensor& grad_in, const Tensor& grad_out,
                                 const Tensor& saved);
extern KernelTable<UnaryBackwardKernel> unary_backward_kernel;

// Checks clamp's bounds against x (as `op`) and packs them; shared with clamp_.
UnaryParams clamp_params(const char* op, const Tensor& x, std::optional<double> min, std::optional<double> max);

}  // namespace ks
