// ops/cuda/mixture.cu — CUDA kernels of mixture_softmax (the fused MGK
// attention weights), forward and backward, with the numerics of
// ops/cpu/mixture.cpp (see ops/mixture.h for the math).
//
// Forward: one warp per row (n, i) for rows of up to 1024 keys, else one
// block (block_reduce.cuh); a thread handles keys j ≡ lane, and for each key
// recomputes its M components x_r = scale·s_r + bias_r from the scores (M is
// small: reading M values again is cheaper than a scratch row). Three passes
// over the row: the masked maxima ℓ_j = max_r x_r (+ −inf if hidden) and the
// row's max m; A_j ∝ exp(ℓ_j − m)·Σ_r exp(x_r − max_r x_r), summed in
// double; then the scaling and, if wanted, γ. Hidden keys, and a fully
// hidden row, get A = 0 and γ = 0, as on the CPU.
//
// Backward: one warp/block per row forms Σ_j g_ij A_ij (double, stored in
// the dtype like the CPU's); then one thread per (n, r, j) walks the rows i
// in order, recomputing γ_irj, writing ds_irj and summing dbias_rj in double
// — deterministic, no atomics, and no (.., T, M, S) scratch. Keys with A = 0
// pass no gradient (the CPU skips them too).
// Scores and bias are made contiguous (as the CPU kernel does); the mask is
// read in place through per-batch offsets. Not here: the projections and
// the bias (the caller builds them), dropout.
#include <cmath>
#include <vector>

#include "core/copy.h"
#include "core/factory.h"
#include "ops/cuda/block_reduce.cuh"
#include "ops/mixture.h"
#include "ops/mixture_formulas.h"
#include "ops/through_float32.h"

namespace ks::cuda {
namespace {

using namespace mixture_formulas;

// The mask as the kernels read it: row (n, i) key j is at base[n] + i·st + j·ss.
struct MaskView {
  const bool* data = nullptr;  // null: no mask
  const int64_t* base = nullptr;
  int64_t st = 0, ss = 0;
};

// One key's components: mx = max_r x_r, m0 = mx (0 if −inf, so x − m0 is
// never −inf − −inf), u = Σ_r exp(x_r − m0) (soft only), first = the first r
// reaching mx (hard only).
template <class T> struct Key {
  T mx, m0, u;
  int64_t first;
};

template <class T>
__device__ inline Key<T> key_at(const T* s, const T* b, int64_t M, int64_t S, int64_t j, T scale, bool hard) {
  Key<T> k{T(-INFINITY), T(0), T(0), 0};
  for (int64_t r = 0; r < M; ++r) {
    const T v = component_logit(scale, s[r * S + j], b[r * S + j]);
    if (v > k.mx) {
      k.mx = v;
      k.first = r;
    }
  }
  // The CPU picks the first r with x_r == mx; with mx = −inf every x_r equals it, so r = 0.
  if (k.mx == T(-INFINITY)) k.first = 0;
  k.m0 = k.mx == T(-INFINITY) ? T(0) : k.mx;
  if (!hard)
    for (int64_t r = 0; r < M; ++r) k.u += kmath::exp(component_logit(scale, s[r * S + j], b[r * S + j]) - k.m0);
  return k;
}

// γ's numerator for component r: exp(x_r − m0), or the one-hot first argmax.
template <class T>
__device__ inline T component(const Key<T>& k, const T* s, const T* b, int64_t S, int64_t r, int64_t j, T scale,
                              bool hard) {
  if (hard) return r == k.first ? T(1) : T(0);
  return kmath::exp(component_logit(scale, s[r * S + j], b[r * S + j]) - k.m0);
}

template <class T> __device__ inline T mask_add(const MaskView& mask, int64_t n, int64_t i, int64_t j) {
  if (!mask.data) return T(0);
  return mask.data[mask.base[n] + i * mask.st + j * mask.ss] ? T(-INFINITY) : T(0);
}

template <class T, int TPR>
__global__ void forward_rows(T* a, T* resp, const T* scores, const T* bias, MaskView mask, Geometry G, T scale,
                             bool hard) {
  const int lane = row_lane<TPR>();
  const int64_t rows = G.N * G.T, S = G.S, M = G.M, MS = M * S;
  for (int64_t row = first_row<TPR>(); row < rows; row += row_stride<TPR>()) {
    const int64_t n = row / G.T, i = row - n * G.T;
    const T* s = scores + row * MS;
    const T* b = bias + n * MS;
    T* ar = a + row * S;
    T* gr = resp ? resp + row * MS : nullptr;
    // Pass 1: ℓ_j (the masked maxima) into A's row, and their max m.
    T m = T(-INFINITY);
    for (int64_t j = lane; j < S; j += TPR) {
      T mx = T(-INFINITY);
      for (int64_t r = 0; r < M; ++r) {
        const T v = component_logit(scale, s[r * S + j], b[r * S + j]);
        mx = v > mx ? v : mx;
      }
      const T l = mx + mask_add<T>(mask, n, i, j);
      ar[j] = l;
      m = l > m ? l : m;
    }
    m = row_max<TPR>(m);
    if (m == T(-INFINITY)) {  // nothing visible: zeros, never NaN
      for (int64_t j = lane; j < S; j += TPR) {
        ar[j] = T(0);
        if (gr)
          for (int64_t r = 0; r < M; ++r) gr[r * S + j] = T(0);
      }
      continue;
    }
    // Pass 2: unnormalised A_j = exp(ℓ_j − m)·u_j (hard: without u).
    double sum = 0;
    for (int64_t j = lane; j < S; j += TPR) {
      const T e = std::exp(ar[j] - m);
      const T al = hard ? e : e * key_at(s, b, M, S, j, scale, false).u;
      ar[j] = al;
      sum += double(al);
    }
    sum = row_sum<TPR>(sum);
    const T inv = T(1.0 / sum);
    // Pass 3: normalise; γ_r = exp(x_r − m0)/u on visible keys (hard: the one-hot), 0 on hidden ones.
    for (int64_t j = lane; j < S; j += TPR) {
      ar[j] *= inv;
      if (!gr) continue;
      const Key<T> k = key_at(s, b, M, S, j, scale, hard);
      const bool live = k.mx + mask_add<T>(mask, n, i, j) != T(-INFINITY);
      const T factor = !live ? T(0) : hard ? T(1) : T(1) / k.u;
      for (int64_t r = 0; r < M; ++r) gr[r * S + j] = component(k, s, b, S, r, j, scale, hard) * factor;
    }
  }
}

// dot[row] = Σ_j g_ij A_ij, in double, stored in T (as the CPU's).
template <class T, int TPR> __global__ void row_dots(T* dot, const T* g, const T* a, int64_t rows, int64_t S) {
  const int lane = row_lane<TPR>();
  for (int64_t row = first_row<TPR>(); row < rows; row += row_stride<TPR>()) {
    double acc = 0;
    for (int64_t j = lane; j < S; j += TPR) acc += double(g[row * S + j]) * double(a[row * S + j]);
    acc = row_sum<TPR>(acc);
    if (lane == 0) dot[row] = T(acc);
  }
}

// One thread per (n, r, j), walking i in order: ds_irj = scale·γ_irj·dℓ_ij and dbias_nrj = Σ_i γ_irj·dℓ_ij.
template <class T>
__global__ void backward_columns(T* ds, T* db, const T* g, const T* a, const T* dot, const T* scores, const T* bias,
                                 Geometry G, T scale, bool hard) {
  const int64_t S = G.S, M = G.M, MS = M * S, total = G.N * MS;
  for (int64_t e : grid_stride(total)) {
    const int64_t n = e / MS, q = e - n * MS, r = q / S, j = q - r * S;
    const T* b = bias + n * MS;
    double acc = 0;
    for (int64_t i = 0; i < G.T; ++i) {
      const int64_t row = n * G.T + i;
      const T al = a[row * S + j];
      T* dsp = ds ? ds + row * MS + q : nullptr;
      if (al == T(0)) {
        if (dsp) *dsp = T(0);
        continue;
      }
      const T* s = scores + row * MS;
      const Key<T> k = key_at(s, b, M, S, j, scale, hard);
      const T w = key_weight(al, g[row * S + j], dot[row], k.u, hard);
      const T x = component(k, s, b, S, r, j, scale, hard);
      if (dsp) *dsp = scale * (x * w);
      acc += double(x) * double(w);
    }
    if (db) db[e] = T(acc);
  }
}

template <class T>
void forward_typed(const Tensor& weights, const Tensor& resp, const Tensor& scores, const Tensor& bias,
                   const Tensor& mask, const Geometry& G, T scale, bool hard) {
  const Device dev = scores.device();
  MaskView mv;
  Tensor offsets;
  if (mask.defined()) {
    offsets = from_vector(batch_offsets(mask), {G.N}, dev);
    mv = {mask.data<bool>(), offsets.data<int64_t>(), mask.stride(-2), mask.stride(-1)};
  }
  T* rp = resp.defined() ? resp.data<T>() : nullptr;
  const RowLaunch L = row_launch(G.N * G.T, G.S, dev.index);
  DeviceGuard guard(dev);
  const cudaStream_t s = stream(dev);
  if (L.warp_rows)
    forward_rows<T, kWarp>
        <<<L.grid, kThreads, 0, s>>>(weights.data<T>(), rp, scores.data<T>(), bias.data<T>(), mv, G, scale, hard);
  else
    forward_rows<T, kThreads>
        <<<L.grid, kThreads, 0, s>>>(weights.data<T>(), rp, scores.data<T>(), bias.data<T>(), mv, G, scale, hard);
  KS_CUDA_LAUNCH_CHECK();
}

template <class T>
void backward_typed(const Tensor& dscores, const Tensor& dbias, const Tensor& g, const Tensor& weights,
                    const Tensor& scores, const Tensor& bias, const Geometry& G, T scale, bool hard) {
  const Device dev = scores.device();
  const int64_t rows = G.N * G.T;
  Tensor dot = Tensor::empty({rows}, scores.dtype(), dev);
  const RowLaunch L = row_launch(rows, G.S, dev.index);
  DeviceGuard guard(dev);
  const cudaStream_t s = stream(dev);
  if (L.warp_rows)
    row_dots<T, kWarp><<<L.grid, kThreads, 0, s>>>(dot.data<T>(), g.data<T>(), weights.data<T>(), rows, G.S);
  else
    row_dots<T, kThreads><<<L.grid, kThreads, 0, s>>>(dot.data<T>(), g.data<T>(), weights.data<T>(), rows, G.S);
  KS_CUDA_LAUNCH_CHECK();
  const int64_t columns = G.N * G.M * G.S;
  backward_columns<T><<<grid_for(columns, kThreads, dev.index), kThreads, 0, s>>>(
      dscores.defined() ? dscores.data<T>() : nullptr, dbias.defined() ? dbias.data<T>() : nullptr, g.data<T>(),
      weights.data<T>(), dot.data<T>(), scores.data<T>(), bias.data<T>(), G, scale, hard);
  KS_CUDA_LAUNCH_CHECK();
}

void mixture_softmax_cuda(const Tensor& weights, const Tensor& resp, const Tensor& scores_in, const Tensor& bias_in,
                          const Tensor& mask, double scale, bool hard) {
  forward_entry(weights, scores_in, bias_in,
                [&](auto tag, const Tensor& scores, const Tensor& bias, const Geometry& G) {
                  using T = typename decltype(tag)::type;
                  forward_typed<T>(weights, resp, scores, bias, mask, G, T(scale), hard);
                });
}

void mixture_softmax_backward_cuda(const Tensor& dscores, const Tensor& dbias, const Tensor& g_in,
                                   const Tensor& weights, const Tensor& scores_in, const Tensor& bias_in, double scale,
                                   bool hard) {
  backward_entry(dscores, dbias, g_in, weights, scores_in, bias_in,
                 [&](auto tag, const Tensor& g, const Tensor& scores, const Tensor& bias, const Geometry& G) {
                   using T = typename decltype(tag)::type;
                   backward_typed<T>(dscores, dbias, g, weights, scores, bias, G, T(scale), hard);
                 });
}

}  // namespace
KS_REGISTER_KERNEL(mixture_softmax_kernel, CUDA, through_float32::mixture_softmax<mixture_softmax_cuda>);
KS_REGISTER_KERNEL(mixture_softmax_backward_kernel, CUDA,
                   through_float32::mixture_softmax_backward<mixture_softmax_backward_cuda>);
}  // namespace ks::cuda
