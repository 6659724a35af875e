// ops/cuda/unary.cu — CUDA kernels for the unary ops and their fused
// backwards: the formulas of ops/cpu/unary.cpp with CUDA's math library in
// place of vec_math.h (float32 results agree with the CPU's to a few ulp).
#include <cmath>
#include <limits>

#include "core/cuda/loops.cuh"
#include "ops/unary.h"

namespace ks::cuda {
namespace {

constexpr double kSqrt2OverPi = 0.79788456080286535588;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;
constexpr double kSqrtHalf = 0.70710678118654752440;
constexpr double kGeluTanhC = 0.044715;

template <class T>
__device__ inline T sigmoid(T v) {
  return T(1) / (T(1) + std::exp(-v));
}

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
    case UnaryOp::Neg: cuda_map<T, T>([] __device__(T v) { return T(-v); }, out, {x}); return;
    case UnaryOp::Abs: cuda_map<T, T>([] __device__(T v) { return v < 0 ? T(-v) : v; }, out, {x}); return;
    case UnaryOp::Relu: cuda_map<T, T>([] __device__(T v) { return v < 0 ? T(0) : v; }, out, {x}); return;
    case UnaryOp::Clamp: {
      const T lo = int_bound<T>(p.a), hi = int_bound<T>(p.b);
      cuda_map<T, T>([lo, hi] __device__(T v) { return v < lo ? lo : (v > hi ? hi : v); }, out, {x});
      return;
    }
    default: KS_ASSERT(false);
  }
}

template <class T>
void pow_scalar(double e, const Tensor& out, const Tensor& x) {
  const T c = T(e);
  if (e == 0) cuda_map<T, T>([] __device__(T) { return T(1); }, out, {x});
  else if (e == 1) cuda_map<T, T>([] __device__(T v) { return v; }, out, {x});
  else if (e == 2) cuda_map<T, T>([] __device__(T v) { return v * v; }, out, {x});
  else if (e == 3) cuda_map<T, T>([] __device__(T v) { return v * v * v; }, out, {x});
  else if (e == 0.5) cuda_map<T, T>([] __device__(T v) { return std::sqrt(v); }, out, {x});
  else if (e == -0.5) cuda_map<T, T>([] __device__(T v) { return T(1) / std::sqrt(v); }, out, {x});
  else if (e == -1) cuda_map<T, T>([] __device__(T v) { return T(1) / v; }, out, {x});
  else cuda_map<T, T>([c] __device__(T v) { return T(std::pow(v, c)); }, out, {x});
}

template <class T>
void floating_unary(UnaryOp op, const UnaryParams& p, const Tensor& out, const Tensor& x) {
  switch (op) {
    case UnaryOp::Neg: cuda_map<T, T>([] __device__(T v) { return -v; }, out, {x}); return;
    case UnaryOp::Exp: cuda_map<T, T>([] __device__(T v) { return std::exp(v); }, out, {x}); return;
    case UnaryOp::Log: cuda_map<T, T>([] __device__(T v) { return std::log(v); }, out, {x}); return;
    case UnaryOp::Sqrt: cuda_map<T, T>([] __device__(T v) { return std::sqrt(v); }, out, {x}); return;
    case UnaryOp::Rsqrt: cuda_map<T, T>([] __device__(T v) { return T(1) / std::sqrt(v); }, out, {x}); return;
    case UnaryOp::Abs: cuda_map<T, T>([] __device__(T v) { return std::fabs(v); }, out, {x}); return;
    case UnaryOp::Tanh: cuda_map<T, T>([] __device__(T v) { return std::tanh(v); }, out, {x}); return;
    case UnaryOp::Sigmoid: cuda_map<T, T>([] __device__(T v) { return sigmoid(v); }, out, {x}); return;
    case UnaryOp::Relu: cuda_map<T, T>([] __device__(T v) { return v < T(0) ? T(0) : v; }, out, {x}); return;
    case UnaryOp::Silu: cuda_map<T, T>([] __device__(T v) { return v * sigmoid(v); }, out, {x}); return;
    case UnaryOp::Gelu:
      cuda_map<T, T>([] __device__(T v) { return T(0.5) * v * (T(1) + std::erf(v * T(kSqrtHalf))); }, out, {x});
      return;
    case UnaryOp::GeluTanh:
      cuda_map<T, T>(
          [] __device__(T v) {
            const T u = T(kSqrt2OverPi) * (v + T(kGeluTanhC) * v * v * v);
            return T(0.5) * v * (T(1) + std::tanh(u));
          },
          out, {x});
      return;
    case UnaryOp::Elu: {
      const T alpha = T(p.a);
      cuda_map<T, T>([alpha] __device__(T v) { return v > T(0) ? v : T(alpha * std::expm1(v)); }, out, {x});
      return;
    }
    case UnaryOp::Clamp: {
      const T lo = T(p.a), hi = T(p.b);
      cuda_map<T, T>([lo, hi] __device__(T v) { return v < lo ? lo : (v > hi ? hi : v); }, out, {x});
      return;
    }
    case UnaryOp::Pow: pow_scalar<T>(p.a, out, x); return;
  }
  KS_ASSERT(false);
}

void unary_cuda(UnaryOp op, const UnaryParams& p, const Tensor& out, const Tensor& x) {
  dispatch_numeric(out.dtype(), "unary op", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_integral_v<T>) integer_unary<T>(op, p, out, x);
    else floating_unary<T>(op, p, out, x);
  });
}

template <class T>
void pow_scalar_backward(double e, const Tensor& gi, const Tensor& go, const Tensor& x) {
  const T c = T(e), cm1 = T(e - 1);
  if (e == 0) cuda_map<T, T, T>([] __device__(T, T) { return T(0); }, gi, {go, x});
  else if (e == 1) cuda_map<T, T, T>([] __device__(T g, T) { return g; }, gi, {go, x});
  else if (e == 2) cuda_map<T, T, T>([] __device__(T g, T v) { return T(2) * g * v; }, gi, {go, x});
  else if (e == 3) cuda_map<T, T, T>([] __device__(T g, T v) { return T(3) * g * v * v; }, gi, {go, x});
  else if (e == 0.5) cuda_map<T, T, T>([] __device__(T g, T v) { return T(0.5) * g / std::sqrt(v); }, gi, {go, x});
  else if (e == -1) cuda_map<T, T, T>([] __device__(T g, T v) { return -g / (v * v); }, gi, {go, x});
  else cuda_map<T, T, T>([c, cm1] __device__(T g, T v) { return c * g * T(std::pow(v, cm1)); }, gi, {go, x});
}

// `s` is the saved output or input, as unary.h lists.
template <class T>
void floating_unary_backward(UnaryOp op, const UnaryParams& p, const Tensor& gi, const Tensor& go, const Tensor& s) {
  switch (op) {
    case UnaryOp::Exp: cuda_map<T, T, T>([] __device__(T g, T y) { return g * y; }, gi, {go, s}); return;
    case UnaryOp::Log: cuda_map<T, T, T>([] __device__(T g, T x) { return g / x; }, gi, {go, s}); return;
    case UnaryOp::Sqrt: cuda_map<T, T, T>([] __device__(T g, T y) { return T(0.5) * g / y; }, gi, {go, s}); return;
    case UnaryOp::Rsqrt:
      cuda_map<T, T, T>([] __device__(T g, T y) { return T(-0.5) * g * y * y * y; }, gi, {go, s});
      return;
    case UnaryOp::Abs:
      cuda_map<T, T, T>([] __device__(T g, T x) { return x > T(0) ? g : (x < T(0) ? -g : T(0)); }, gi, {go, s});
      return;
    case UnaryOp::Tanh: cuda_map<T, T, T>([] __device__(T g, T y) { return g * (T(1) - y * y); }, gi, {go, s}); return;
    case UnaryOp::Sigmoid:
      cuda_map<T, T, T>([] __device__(T g, T y) { return g * y * (T(1) - y); }, gi, {go, s});
      return;
    case UnaryOp::Relu: cuda_map<T, T, T>([] __device__(T g, T y) { return y > T(0) ? g : T(0); }, gi, {go, s}); return;
    case UnaryOp::Silu:
      cuda_map<T, T, T>(
          [] __device__(T g, T x) {
            const T sg = sigmoid(x);
            return g * sg * (T(1) + x * (T(1) - sg));
          },
          gi, {go, s});
      return;
    case UnaryOp::Gelu:
      cuda_map<T, T, T>(
          [] __device__(T g, T x) {
            const T cdf = T(0.5) * (T(1) + std::erf(x * T(kSqrtHalf)));
            const T pdf = T(kInvSqrt2Pi) * std::exp(T(-0.5) * x * x);
            return g * (cdf + x * pdf);
          },
          gi, {go, s});
      return;
    case UnaryOp::GeluTanh:
      cuda_map<T, T, T>(
          [] __device__(T g, T x) {
            const T x2 = x * x;
            const T t = std::tanh(T(kSqrt2OverPi) * x * (T(1) + T(kGeluTanhC) * x2));
            const T du = T(kSqrt2OverPi) * (T(1) + T(3 * kGeluTanhC) * x2);
            return g * T(0.5) * ((T(1) + t) + x * (T(1) - t * t) * du);
          },
          gi, {go, s});
      return;
    case UnaryOp::Elu: {
      const T alpha = T(p.a);
      cuda_map<T, T, T>([alpha] __device__(T g, T x) { return x > T(0) ? g : T(g * alpha * std::exp(x)); }, gi,
                        {go, s});
      return;
    }
    case UnaryOp::Clamp: {
      const T lo = T(p.a), hi = T(p.b);
      cuda_map<T, T, T>([lo, hi] __device__(T g, T x) { return (x >= lo && x <= hi) ? g : T(0); }, gi, {go, s});
      return;
    }
    case UnaryOp::Pow: pow_scalar_backward<T>(p.a, gi, go, s); return;
    case UnaryOp::Neg: break;  // neg's backward is neg
  }
  KS_ASSERT(false);
}

void unary_backward_cuda(UnaryOp op, const UnaryParams& p, const Tensor& gi, const Tensor& go, const Tensor& s) {
  dispatch_floating(gi.dtype(), "unary backward", [&](auto tag) {
    floating_unary_backward<typename decltype(tag)::type>(op, p, gi, go, s);
  });
}

}  // namespace
KS_REGISTER_KERNEL(unary_kernel, CUDA, unary_cuda);
KS_REGISTER_KERNEL(unary_backward_kernel, CUDA, unary_backward_cuda);
}  // namespace ks::cuda
