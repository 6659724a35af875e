// ops/softmax_formulas.h — what the CPU and CUDA softmax / log_softmax
// kernels share (ops/softmax.h): the (outer, n, inner) view of a tensor
// around the softmax dim, the per-row and per-element formulas, and the
// kernels' entries with their dispatch over (dtype, softmax or log_softmax).
//
// For a row x with max m (taken as 0 when the whole row is -inf, so that
// every exp(x - m) is 0 and no -inf - -inf NaN appears) and s = Σ exp(x - m),
// accumulated in double:
//   softmax      y = exp(x - m) · (1/s)        dx = y · (g - Σ g·y)
//   log_softmax  y = (x - m) - log s           dx = g - exp(y) · Σ g
// and a fully masked row (s = 0) gives zeros, or -inf for log_softmax, with
// a zero gradient. Not here: the row loops and their reductions (SIMD lanes
// and tiles on the CPU, warps, blocks and columns on the GPU).
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "core/copy.h"
#include "core/dispatch.h"
#include "core/tensor.h"
#include "ops/kernel_math.h"

namespace ks::softmax_formulas {

// A contiguous tensor as (outer, n, inner) around `dim`.
struct Geometry {
  int64_t outer = 1, n = 1, inner = 1;
};

inline Geometry geometry(const Shape& sizes, int64_t dim) {
  Geometry g;
  if (sizes.empty()) return g;  // a 0-d tensor is one row of one element
  for (int64_t d = 0; d < int64_t(sizes.size()); ++d) {
    if (d < dim)
      g.outer *= sizes[size_t(d)];
    else if (d == dim)
      g.n = sizes[size_t(d)];
    else
      g.inner *= sizes[size_t(d)];
  }
  return g;
}

// The shift of a row whose max is m.
template <class T> KS_HOST_DEVICE inline T row_shift(T m) { return m == -T(INFINITY) ? T(0) : m; }

// What the shifted row is normalised by: log s (Log) or 1/s; 0 for s = 0.
template <class T, bool Log> KS_HOST_DEVICE inline T row_norm(double s) {
  if (s == 0) return T(0);
  if constexpr (Log)
    return T(::log(s));
  else
    return T(1.0 / s);
}

// One output from its input x, the row's shift m and norm.
template <class T, bool Log> KS_HOST_DEVICE inline T softmax_out(T x, T m, T norm) {
  if constexpr (Log)
    return (x - m) - norm;
  else
    return kmath::exp(x - m) * norm;
}

// One input gradient from g, the output y and the row's a = Σ g·y (softmax)
// or Σ g (log_softmax).
template <class T, bool Log> KS_HOST_DEVICE inline T softmax_grad(T g, T y, T a) {
  if constexpr (Log)
    return g - kmath::exp(y) * a;
  else
    return y * (g - a);
}

// f(tag, log) for dtype `dt` (floating; a dtype tag as dispatch_floating
// gives it) and `log` as std::true_type / std::false_type, so that a backend's
// loops are compiled once per (dtype, softmax or log_softmax). A dtype error
// names the op `op` ("softmax", "softmax backward") or its log_ form.
template <class F> void dispatch_softmax(DType dt, bool log, const char* op, const char* log_op, F&& f) {
  dispatch_floating(dt, log ? log_op : op, [&](auto tag) {
    if (log)
      f(tag, std::true_type{});
    else
      f(tag, std::false_type{});
  });
}

// The kernels' entries, the same on both backends: nothing to do for an empty
// output; else the inputs made contiguous, the geometry around dim, and the
// dispatch above; then f(tag, log, x, G) forward, f(tag, log, g, y, G) backward.
template <class F> void forward_entry(const Tensor& out, const Tensor& x_in, int64_t dim, bool log, F&& f) {
  if (out.numel() == 0) return;
  const Tensor x = contiguous_raw(x_in);
  const Geometry G = geometry(x.sizes(), dim);
  dispatch_softmax(x.dtype(), log, "softmax", "log_softmax", [&](auto tag, auto is_log) { f(tag, is_log, x, G); });
}

template <class F>
void backward_entry(const Tensor& dx, const Tensor& g_in, const Tensor& y_in, int64_t dim, bool log, F&& f) {
  if (dx.numel() == 0) return;
  const Tensor g = contiguous_raw(g_in), y = contiguous_raw(y_in);
  const Geometry G = geometry(y.sizes(), dim);
  dispatch_softmax(y.dtype(), log, "softmax backward", "log_softmax backward",
                   [&](auto tag, auto is_log) { f(tag, is_log, g, y, G); });
}

}  // namespace ks::softmax_formulas
