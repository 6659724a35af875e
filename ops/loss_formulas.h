// ops/loss_formulas.h — what the CPU and the CUDA loss kernels share
// (ops/loss.h): the error for a bad target, the loss of one class row from
// its log-sum-exp, the cross-entropy gradient of one logit, and the mse
// kernels that are plain elementwise maps (written once over Loops::map:
// cpu_map for CpuLoops, cuda_map for CudaLoops).
//
// Cross-entropy with label smoothing ε over C classes, for a row x with
// target t and lse = log Σ_c exp(x_c):
//   loss = lse − (1 − ε)·x_t − (ε/C)·Σ_c x_c
//   ∂loss/∂x_c = softmax_c − (1 − ε)·[c = t] − ε/C,  softmax_c = exp(x_c − lse)
// Not here: the row loops and their reductions (each backend's own: SIMD
// lanes on the CPU, warps and blocks on the GPU), the target checks' passes.
#pragma once

#include <cstdint>

#include "core/dtype.h"
#include "core/error.h"
#include "core/tensor.h"
#include "ops/kernel_math.h"
#include "ops/loss.h"

namespace ks::loss_formulas {

inline const char* class_loss_name(const ClassLossSpec& s) { return s.from_logits ? "cross_entropy" : "nll_loss"; }

// The error for target value `target` at position `pos`, the first bad one.
[[noreturn]] inline void throw_bad_target(const ClassLossSpec& spec, int64_t target, int64_t pos, int64_t C) {
  throw Error(str(class_loss_name(spec), ": target ", target, " at position ", pos, " is out of range for ", C,
                  " classes (ignore_index is ", spec.ignore_index, ")"));
}

// One row's cross-entropy from its log-sum-exp, the target's logit and (only
// when eps > 0) the sum of the row's logits; in double.
KS_HOST_DEVICE inline double class_row_loss(double lse, double x_target, double sum_x, double eps, int64_t C) {
  double v = lse - (1 - eps) * x_target;
  if (eps > 0) v -= eps / double(C) * sum_x;
  return v;
}

// g·(softmax_c − ε/C) for one logit x of a row with log-sum-exp lse; the
// target's logit then takes − g·(1 − ε) more (`on`).
template <class T> struct CrossEntropyGrad {
  T smooth, on;  // ε/C and 1 − ε
  KS_HOST_DEVICE T operator()(T g, T x, T lse) const { return g * (kmath::exp(x - lse) - smooth); }
};

template <class T> struct SquaredDiff {  // (a − b)²
  KS_HOST_DEVICE T operator()(T a, T b) const { return (a - b) * (a - b); }
};
template <class T> struct ScaledDiff {  // c·(x − y)·g
  T c;
  KS_HOST_DEVICE T operator()(T x, T y, T g) const { return c * (x - y) * g; }
};

// The mse kernels that need no reduction, for the backend whose loop is Loops.
template <class Loops> struct mse_maps {
  // out = (a − b)², elementwise.
  template <class T> static void squared_diff(const Tensor& out, const Tensor& a, const Tensor& b) {
    Loops::template map<T, T, T>(SquaredDiff<T>{}, out, {a, b});
  }

  // The mse backward kernel of ops/loss.h.
  static void backward(const Tensor& da, const Tensor& db, const Tensor& a, const Tensor& b, const Tensor& g,
                       double scale) {
    dispatch_floating(a.dtype(), "mse_loss backward", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T c = T(2 * scale);
      if (da.defined()) Loops::template map<T, T, T, T>(ScaledDiff<T>{c}, da, {a, b, g});
      if (db.defined()) Loops::template map<T, T, T, T>(ScaledDiff<T>{c}, db, {b, a, g});
    });
  }
};

}  // namespace ks::loss_formulas
