// ops/layer_norm_formulas.h — what the CPU and CUDA layer_norm kernels share
// (ops/layer_norm.h): the per-element formulas, the forward's entry and its
// dispatch over the affine cases, and the backward's entry.
//
// For a row x of N elements, in double: μ = Σx / N, σ² = Σ(x − μ)² / N (two
// passes, never E[x²] − E[x]²), rstd = 1/√(σ² + eps), x̂ = (x − μ)·rstd,
// y = x̂·w + b. Backward with gw = g·w, a = mean(gw), c = mean(gw·x̂):
//   dx = rstd·(gw − a − x̂·c),  dw = Σ_rows g·x̂,  db = Σ_rows g.
// Not here: the row loops and the reductions across lanes, threads and row
// blocks (each backend's own, each deterministic).
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "core/copy.h"
#include "core/dispatch.h"
#include "core/host_device.h"
#include "core/tensor.h"

namespace ks::layer_norm_formulas {

KS_HOST_DEVICE inline double rstd_of(double var, double eps) { return 1.0 / ::sqrt(var + eps); }

KS_HOST_DEVICE inline double normalized(double x, double mu, double rstd) { return (x - mu) * rstd; }

// One output from x̂; w and b are read only when present (HasW, HasB), so
// the CPU's loop over a row stays branch-free.
template <class T, bool HasW, bool HasB>
KS_HOST_DEVICE inline T affine(double xhat, const T* w, const T* b, int64_t i) {
  T v = T(xhat);
  if constexpr (HasW) v *= w[i];
  if constexpr (HasB) v += b[i];
  return v;
}

KS_HOST_DEVICE inline double input_grad(double gw, double xhat, double a, double c, double rstd) {
  return rstd * (gw - a - xhat * c);
}

// The forward's operands, contiguous, and the (M rows, N columns) view.
struct ForwardInputs {
  Tensor x, w, b;
  int64_t M = 0, N = 0;
};

// The forward's entry, the same on both backends: nothing to do without rows;
// else the operands made contiguous and f(tag, in) under the dtype dispatch.
template <class F>
void forward_entry(const Tensor& y, const Tensor& mean, const Tensor& x, const Tensor& w, const Tensor& b, F&& f) {
  ForwardInputs in;
  in.M = mean.numel();
  if (in.M == 0) return;
  in.N = y.numel() / in.M;
  in.x = contiguous_raw(x);
  in.w = w.defined() ? contiguous_raw(w) : w;
  in.b = b.defined() ? contiguous_raw(b) : b;
  dispatch_floating(in.x.dtype(), "layer_norm", [&](auto tag) { f(tag, in); });
}

// f(has_w, has_b) with the two flags as std::true_type / std::false_type, so
// that a backend's row loop is compiled once per affine case.
template <class F> void with_affine(bool has_w, bool has_b, F&& f) {
  using Y = std::true_type;
  using N = std::false_type;
  if (has_w && has_b)
    f(Y{}, Y{});
  else if (has_w)
    f(Y{}, N{});
  else if (has_b)
    f(N{}, Y{});
  else
    f(N{}, N{});
}

// The backward's operands, contiguous, and the (M rows, N columns) view;
// `empty` when nothing flows, in which case the parameter grads have been
// zeroed (the grads of an empty batch) and the kernel has nothing to do.
struct BackwardInputs {
  Tensor g, x, w;
  int64_t M = 0, N = 0;
  bool empty = true;
};

inline BackwardInputs backward_inputs(const Tensor& dw, const Tensor& db, const Tensor& g, const Tensor& x,
                                      const Tensor& mean, const Tensor& w) {
  BackwardInputs in;
  in.M = mean.numel();
  in.N = in.M > 0 ? g.numel() / in.M : 0;
  if (in.N == 0 || in.M == 0) {
    if (dw.defined()) fill_(dw, 0.0);
    if (db.defined()) fill_(db, 0.0);
    return in;
  }
  in.empty = false;
  in.g = contiguous_raw(g);
  in.x = x.defined() ? contiguous_raw(x) : x;
  in.w = w.defined() ? contiguous_raw(w) : w;
  return in;
}

}  // namespace ks::layer_norm_formulas
