// ops/mixture_formulas.h — what the CPU and CUDA mixture_softmax kernels
// share (ops/mixture.h for the math): the (N, T, M, S) view of the scores,
// the mask's per-batch row offsets, a component's logit and the backward's
// per-key weight, and the kernels' entries (contiguity, geometry, dispatch).
// Not here: the row loops (a vectorised scratch row on the CPU, a thread per
// key recomputing its components on the GPU) and their reductions.
#pragma once

#include <cstdint>
#include <vector>

#include "core/copy.h"
#include "core/dispatch.h"
#include "core/host_device.h"
#include "core/tensor.h"
#include "ops/kernel_math.h"

namespace ks::mixture_formulas {

// Contiguous scores (..., T, M, S) with the batch dims flattened into N.
struct Geometry {
  int64_t N = 1, T = 1, M = 1, S = 1;
};

inline Geometry geometry(const Tensor& scores) {
  const Shape& ss = scores.sizes();
  const size_t nd = ss.size();
  Geometry g;
  for (size_t d = 0; d + 3 < nd; ++d) g.N *= ss[d];
  g.T = ss[nd - 3];
  g.M = ss[nd - 2];
  g.S = ss[nd - 1];
  return g;
}

// For a bool mask view (..., T, S): the offset of row (n, i = 0) for every
// flat batch index n, so the kernels read the mask in place, broadcast or not.
inline std::vector<int64_t> batch_offsets(const Tensor& view) {
  const int64_t nb = view.dim() - 2;
  int64_t n_total = 1;
  for (int64_t d = 0; d < nb; ++d) n_total *= view.size(d);
  std::vector<int64_t> off(static_cast<size_t>(n_total));
  for (int64_t n = 0; n < n_total; ++n) {
    int64_t rem = n, o = 0;
    for (int64_t d = nb - 1; d >= 0; --d) {
      o += (rem % view.size(d)) * view.stride(d);
      rem /= view.size(d);
    }
    off[size_t(n)] = o;
  }
  return off;
}

// x_r = scale·s_r + bias_r: component r's logit for one key.
template <class T> KS_HOST_DEVICE inline T component_logit(T scale, T s, T b) { return scale * s + b; }

// Backward, per key: dℓ = A (g − Σ g·A) and γ_r = x_r / u give the weight
// w = dℓ / u that multiplies each component's numerator x_r (hard: w = dℓ;
// 0 where u = 0, a key no component reaches).
template <class T> KS_HOST_DEVICE inline T key_weight(T a, T g, T dot, T u, bool hard) {
  const T dl = a * (g - dot);
  return hard ? dl : (u > T(0) ? dl / u : T(0));
}

// The kernels' entries, the same on both backends: scores and bias made
// contiguous, their geometry, and the dtype dispatch naming the op; then
// f(tag, scores, bias, G) (tag as dispatch_floating gives it).
// Forward: nothing to do for an empty output.
template <class F> void forward_entry(const Tensor& weights, const Tensor& scores_in, const Tensor& bias_in, F&& f) {
  if (weights.numel() == 0) return;
  const Tensor scores = contiguous_raw(scores_in), bias = contiguous_raw(bias_in);
  const Geometry G = geometry(scores);
  dispatch_floating(scores.dtype(), "mixture_softmax", [&](auto tag) { f(tag, scores, bias, G); });
}

// Backward: with no rows or no keys nothing reaches the inputs (the gradients
// are zeroed); with no gradient asked for, nothing to do. f(tag, g, scores,
// bias, G) with g contiguous too.
template <class F>
void backward_entry(const Tensor& dscores, const Tensor& dbias, const Tensor& g_in, const Tensor& weights,
                    const Tensor& scores_in, const Tensor& bias_in, F&& f) {
  const Tensor scores = contiguous_raw(scores_in), bias = contiguous_raw(bias_in);
  const Geometry G = geometry(scores);
  if (weights.numel() == 0) {
    if (dscores.defined()) fill_(dscores, 0.0);
    if (dbias.defined()) fill_(dbias, 0.0);
    return;
  }
  if (!dscores.defined() && !dbias.defined()) return;
  const Tensor g = contiguous_raw(g_in);
  dispatch_floating(scores.dtype(), "mixture_softmax backward", [&](auto tag) { f(tag, g, scores, bias, G); });
}

}  // namespace ks::mixture_formulas
