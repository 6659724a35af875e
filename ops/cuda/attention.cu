// ops/cuda/attention.cu — CUDA kernels of scaled_dot_product_attention,
// FlashAttention-2 style: the (T, S) scores only ever exist one
// (query tile, key tile) block at a time, in shared memory (math in
// ops/attention.h; the CPU twin is ops/cpu/attention.cpp).
//
// Geometry. A block is 4 warps; a query tile is 4·rw rows (rw rows per warp,
// 4, 2 or 1: the most that fits the device's shared memory for this p, e and
// dtype); a key tile is 32 keys, one per lane. Lane c of the warp owning row
// r computes score (r, c) as a dot product over p from shared memory (K rows
// padded to p + 1 so that the 32 lanes hit distinct banks), so any p and e
// work, with no template per head size.
//   forward   one block per (b, h, query tile): walks the key tiles the tile
//             can see (a causal mask ends the walk early), online softmax with
//             the running max and sum per row in shared memory (each row is
//             owned by one warp: warp shuffles for the row max and sum), the
//             output accumulator (rows, e) in shared memory; writes out, lse.
//   backward  D = rowsum(dO∘O) by a small kernel, then two kernels without
//             atomics, each summing in a fixed order (deterministic):
//             dK/dV: one block per (b, h, key tile), looping over the query
//             tiles that see it; dQ: one block per (b, h, query tile), looping
//             over its key tiles. Both recompute P = exp(s − lse) and
//             dS = P∘(f·dO vᵀ − D) (f = dropout factor); dK/dV also W = P·f.
// Grouped-query attention: k and v have g heads; query pair b·h + n reads
// key/value pair (b·h + n) / group (attention_formulas::kv_pair), and the
// dK/dV kernel's block (b, key/value head, key tile) walks the group's query
// heads in order, so dK and dV sum over the group, still without atomics.
// ALiBi: −m·|i − j| on every score (forward and the recomputed backward).
// Arithmetic in the input dtype (float32 or float64). The dropout factor of
// element n of the (B, h, T, S) weights comes from Philox block
// first_block + n / 4, word n % 4, as ops/cuda/dropout.cu draws it.
// Inputs are made contiguous at entry; offsets are int64. The tile geometry,
// the online-softmax row update, the dV sum and the launch planning are
// shared with the MGK kernels (ops/cuda/attention_tiles.cuh).
#include <algorithm>
#include <cmath>
#include <string>

#include "core/random_values.h"
#include "ops/attention_formulas.h"
#include "ops/cuda/attention_tiles.cuh"
#include "ops/through_float32.h"

namespace ks::cuda {
namespace {

using namespace attention_formulas;  // key_end, weight_index, drop_factor, kv_pair, alibi_slope
using namespace attention_tiles;     // the tile geometry and its helpers

using Dims = TileDims;  // M = 1

__device__ inline float dexp(float x) { return expf(x); }
__device__ inline double dexp(double x) { return exp(x); }
__device__ inline float dlog(float x) { return logf(x); }
__device__ inline double dlog(double x) { return log(x); }

// ALiBi's bias of score (query position i_abs, key j) for a head of slope m (0 without ALiBi).
template <class T> __device__ inline T alibi_bias(const SdpaParams& prm, T slope, int64_t i_abs, int64_t j) {
  return prm.alibi ? -slope * T(alibi_distance(i_abs, j)) : T(0);
}
template <class T> __device__ inline T head_slope(const SdpaParams& prm, int64_t pair, int64_t H) {
  return prm.alibi ? T(alibi_slope(pair % H, H)) : T(0);
}

// --- forward ---
// Shared: Q (BR, p) | K (32, p + 1) | V (32, e) | P (BR, 32) | O (BR, e) | m (BR) | l (BR)
size_t forward_shared(const Dims& d, int rw, size_t bytes) {
  const int64_t BR = kWarps * rw, P = d.P, E = d.E;
  return size_t(BR * P + kBC * (P + 1) + kBC * E + BR * kBC + BR * E + 2 * BR) * bytes;
}

template <class T>
__global__ void __launch_bounds__(kBlock)
    sdpa_forward(T* out, T* lse, const T* Q, const T* K, const T* V, const bool* pad, Dims d, SdpaParams prm) {
  extern __shared__ __align__(16) unsigned char smem[];
  const int BR = kWarps * d.rw;
  const int64_t P = d.P, E = d.E, KP = P + 1;
  T* Qs = reinterpret_cast<T*>(smem);
  T *Ks = Qs + BR * P, *Vs = Ks + kBC * KP, *Ps = Vs + kBC * E, *Os = Ps + BR * kBC, *ms = Os + BR * E, *ls = ms + BR;
  const auto [pair, i0, rows, pad_b] = query_tile(d, pad);
  const int tid = threadIdx.x, lane = tid % kWarp;
  const T scale = T(prm.scale), slope = head_slope<T>(prm, pair, d.H);
  const int64_t kvp = kv_pair(pair, d.group);

  load_rows(Qs, P, Q + (pair * d.T + i0) * P, rows, P);
  start_rows(Os, ms, ls, BR, E);
  const int64_t jend = key_end(prm, i0 + rows, d.S);
  for (int64_t j0 = 0; j0 < jend; j0 += kBC) {
    const int cols = int(min(int64_t(kBC), jend - j0));
    __syncthreads();  // the previous tile is no longer read
    load_rows(Ks, KP, K + (kvp * d.S + j0) * P, cols, P);
    load_rows(Vs, E, V + (kvp * d.S + j0) * E, cols, E);
    __syncthreads();
    for (const int r : warp_rows(d.rw, rows)) {
      const int64_t i = i0 + r;
      const bool visible = lane < cols && sees(prm, pad_b, i, j0 + lane);
      T s = neg_inf<T>();
      if (visible) {
        s = dot(Qs + r * P, Ks + lane * KP, P) * scale;
        if (prm.alibi) s += alibi_bias(prm, slope, prm.causal_offset + i, j0 + lane);
      }
      const T m_old = ms[r];
      const T m_new = max(m_old, warp_max(s));
      if (m_new == neg_inf<T>()) continue;  // the row has seen nothing yet (uniform)
      T p = visible ? dexp(s - m_new) : T(0);
      const T sum = warp_sum(p);
      const T alpha = dexp(m_old - m_new);  // 0 while m_old = -inf
      if (prm.dropout && visible) p *= drop_factor<T>(prm, weight_index(pair, d.T, d.S, i, j0 + lane));
      Ps[r * kBC + lane] = p;
      online_update(Os + r * E, Ps + r * kBC, Vs, cols, E, alpha, m_new, sum, ms + r, ls + r);
    }
  }
  __syncthreads();
  T* orow = out + (pair * d.T + i0) * E;
  for (int64_t x = tid; x < rows * E; x += kBlock) {
    const T l = ls[x / E];
    orow[x] = l > T(0) ? Os[x] / l : T(0);
  }
  for (int r = tid; r < rows; r += kBlock) lse[pair * d.T + i0 + r] = ls[r] > T(0) ? ms[r] + dlog(ls[r]) : neg_inf<T>();
}

// --- backward ---
// For row r (query i) and lane's key j0 + lane: W = P·f and dS = P·(f·dp − D),
// into Ws, dSs (row stride 32); zeros where the key is hidden or absent.
template <class T>
__device__ inline void scores_backward(T* Ws, T* dSs, const T* Qr, const T* Gr, const T* Ks, const T* Vs, int64_t KP,
                                       int64_t VP, int64_t P, int64_t E, int cols, int64_t pair, int64_t i, int64_t j0,
                                       T lse, T Di, const bool* pad_b, const Dims& d, const SdpaParams& prm) {
  const int lane = threadIdx.x % kWarp;
  T w = 0, ds = 0;
  if (lane < cols && lse != neg_inf<T>() && sees(prm, pad_b, i, j0 + lane)) {
    T s = dot(Qr, Ks + lane * KP, P) * T(prm.scale);
    if (prm.alibi) s += alibi_bias(prm, head_slope<T>(prm, pair, d.H), prm.causal_offset + i, j0 + lane);
    const T p = dexp(s - lse);
    const T f = prm.dropout ? drop_factor<T>(prm, uint64_t((pair * d.T + i) * d.S + j0 + lane)) : T(1);
    const T dp = dot(Gr, Vs + lane * VP, E);
    w = p * f;
    ds = p * (f * dp - Di);
  }
  if (Ws) Ws[lane] = w;
  dSs[lane] = ds;
}

// Shared: K (32, p + 1) | V (32, e + 1) | dK (32, p) | dV (32, e) | Q (BR, p) | dO (BR, e) | W, dS (BR, 32)
size_t kv_shared(const Dims& d, int rw, size_t bytes) {
  const int64_t BR = kWarps * rw, P = d.P, E = d.E;
  return size_t(kBC * (P + 1) + kBC * (E + 1) + kBC * P + kBC * E + BR * P + BR * E + 2 * BR * kBC) * bytes;
}

template <class T>
__global__ void __launch_bounds__(kBlock)
    sdpa_backward_kv(T* dK, T* dV, const T* Q, const T* K, const T* V, const T* G, const T* L, const T* D,
                     const bool* pad, Dims d, SdpaParams prm) {
  extern __shared__ __align__(16) unsigned char smem[];
  const int BR = kWarps * d.rw;
  const int64_t P = d.P, E = d.E, KP = P + 1, VP = E + 1;
  T* Ks = reinterpret_cast<T*>(smem);
  T *Vs = Ks + kBC * KP, *dKs = Vs + kBC * VP, *dVs = dKs + kBC * P, *Qs = dVs + kBC * E, *Gs = Qs + BR * P,
    *Ws = Gs + BR * E, *dSs = Ws + BR * kBC;
  const auto [kvp, j0, cols, pad_b] = key_tile(d, pad);  // kvp: (b, key/value head)
  const int tid = threadIdx.x;
  const T scale = T(prm.scale);

  load_rows(Ks, KP, K + (kvp * d.S + j0) * P, cols, P);
  load_rows(Vs, VP, V + (kvp * d.S + j0) * E, cols, E);
  fill(dKs, kBC * P, T(0));
  fill(dVs, kBC * E, T(0));
  // Under the causal rule, key j0 is seen from query j0 − offset on.
  const int64_t first = prm.causal ? min(max(j0 - prm.causal_offset, int64_t(0)), d.T) : 0;
  for (int64_t pair = kvp * d.group; pair < (kvp + 1) * d.group; ++pair) {  // the query heads reading kvp, in order
    for (int64_t i0 = first / BR * BR; i0 < d.T; i0 += BR) {
      const int rows = int(min(int64_t(BR), d.T - i0));
      __syncthreads();  // the previous query tile is no longer read
      load_rows(Qs, P, Q + (pair * d.T + i0) * P, rows, P);
      load_rows(Gs, E, G + (pair * d.T + i0) * E, rows, E);
      __syncthreads();
      for (const int r : warp_rows(d.rw, rows)) {
        const int64_t i = i0 + r;
        scores_backward(Ws + r * kBC, dSs + r * kBC, Qs + r * P, Gs + r * E, Ks, Vs, KP, VP, P, E, cols, pair, i, j0,
                        L[pair * d.T + i], D[pair * d.T + i], pad_b, d, prm);
      }
      __syncthreads();
      // dV_c += Σ_r W_rc dO_r;  dK_c += scale · Σ_r dS_rc Q_r  (r in order: deterministic)
      accumulate_dv(dVs, Ws, Gs, rows, cols, E);
      for (int64_t x = tid; x < cols * P; x += kBlock) {
        const int64_t c = x / P, a = x % P;
        T acc = 0;
        for (int r = 0; r < rows; ++r) acc += dSs[r * kBC + c] * Qs[r * P + a];
        dKs[x] += acc * scale;
      }
    }
  }
  __syncthreads();
  store(dK + (kvp * d.S + j0) * P, dKs, cols * P);
  store(dV + (kvp * d.S + j0) * E, dVs, cols * E);
}

// Shared: Q (BR, p) | dO (BR, e) | dQ (BR, p) | K (32, p + 1) | V (32, e + 1) | dS (BR, 32)
size_t q_shared(const Dims& d, int rw, size_t bytes) {
  const int64_t BR = kWarps * rw, P = d.P, E = d.E;
  return size_t(2 * BR * P + BR * E + kBC * (P + 1) + kBC * (E + 1) + BR * kBC) * bytes;
}

template <class T>
__global__ void __launch_bounds__(kBlock)
    sdpa_backward_q(T* dQ, const T* Q, const T* K, const T* V, const T* G, const T* L, const T* D, const bool* pad,
                    Dims d, SdpaParams prm) {
  extern __shared__ __align__(16) unsigned char smem[];
  const int BR = kWarps * d.rw;
  const int64_t P = d.P, E = d.E, KP = P + 1, VP = E + 1;
  T* Qs = reinterpret_cast<T*>(smem);
  T *Gs = Qs + BR * P, *dQs = Gs + BR * E, *Ks = dQs + BR * P, *Vs = Ks + kBC * KP, *dSs = Vs + kBC * VP;
  const auto [pair, i0, rows, pad_b] = query_tile(d, pad);
  const int tid = threadIdx.x;
  const T scale = T(prm.scale);
  const int64_t kvp = kv_pair(pair, d.group);

  load_rows(Qs, P, Q + (pair * d.T + i0) * P, rows, P);
  load_rows(Gs, E, G + (pair * d.T + i0) * E, rows, E);
  fill(dQs, BR * P, T(0));
  const int64_t jend = key_end(prm, i0 + rows, d.S);
  for (int64_t j0 = 0; j0 < jend; j0 += kBC) {
    const int cols = int(min(int64_t(kBC), jend - j0));
    __syncthreads();  // the previous key tile is no longer read
    load_rows(Ks, KP, K + (kvp * d.S + j0) * P, cols, P);
    load_rows(Vs, VP, V + (kvp * d.S + j0) * E, cols, E);
    __syncthreads();
    for (const int r : warp_rows(d.rw, rows)) {
      const int64_t i = i0 + r;
      scores_backward<T>(nullptr, dSs + r * kBC, Qs + r * P, Gs + r * E, Ks, Vs, KP, VP, P, E, cols, pair, i, j0,
                         L[pair * d.T + i], D[pair * d.T + i], pad_b, d, prm);
    }
    __syncthreads();
    // dQ_r += scale · Σ_c dS_rc K_c  (c in order)
    for (int64_t x = tid; x < rows * P; x += kBlock) {
      const int64_t r = x / P, a = x % P;
      T acc = 0;
      for (int c = 0; c < cols; ++c) acc += dSs[r * kBC + c] * Ks[c * KP + a];
      dQs[x] += acc * scale;
    }
  }
  __syncthreads();
  store(dQ + (pair * d.T + i0) * P, dQs, rows * P);
}

// --- launches ---
std::string head_sizes(const Dims& d) {
  return "head sizes p = " + std::to_string(d.P) + ", e = " + std::to_string(d.E);
}

void sdpa_forward_cuda(const Tensor& out, const Tensor& lse, const Tensor& q_in, const Tensor& k_in, const Tensor& v_in,
                       const Tensor& pad_in, const SdpaParams& prm) {
  const Tensor q = contiguous_raw(q_in), k = contiguous_raw(k_in), v = contiguous_raw(v_in);
  const Tensor pad = contiguous_or_undefined(pad_in);
  const Device dev = out.device();
  constexpr const char* op = "scaled_dot_product_attention";
  dispatch_floating(out.dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    DeviceGuard guard(dev);
    Dims d{q.size(1), q.size(2), k.size(2), 1, q.size(3), v.size(3), 0, 0, q.size(1) / k.size(1)};
    const Launch l =
        plan(sdpa_forward<T>, forward_shared, d, false, q.size(0) * d.H, sizeof(T), dev.index, op, head_sizes(d));
    sdpa_forward<T><<<l.grid, kBlock, l.bytes, stream(dev)>>>(out.data<T>(), lse.data<T>(), q.data<T>(), k.data<T>(),
                                                              v.data<T>(), pad.defined() ? pad.data<bool>() : nullptr,
                                                              d, prm);
    KS_CUDA_LAUNCH_CHECK();
  });
}

void sdpa_backward_cuda(const Tensor& dq, const Tensor& dk, const Tensor& dv, const Tensor& g_in, const Tensor& q_in,
                        const Tensor& k_in, const Tensor& v_in, const Tensor& out_in, const Tensor& lse,
                        const Tensor& pad_in, const SdpaParams& prm) {
  const Tensor q = contiguous_raw(q_in), k = contiguous_raw(k_in), v = contiguous_raw(v_in), g = contiguous_raw(g_in);
  const Tensor out = contiguous_raw(out_in), pad = contiguous_or_undefined(pad_in);
  const Device dev = g.device();
  constexpr const char* op = "scaled_dot_product_attention backward";
  const int64_t pairs = q.size(0) * q.size(1);
  Tensor D = Tensor::empty({pairs * q.size(2)}, g.dtype(), dev);
  dispatch_floating(g.dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    DeviceGuard guard(dev);
    const cudaStream_t s = stream(dev);
    const bool* padp = pad.defined() ? pad.data<bool>() : nullptr;
    Dims d{q.size(1), q.size(2), k.size(2), 1, q.size(3), v.size(3), 0, 0, q.size(1) / k.size(1)};
    const int64_t rows = pairs * d.T;
    row_dot<T>
        <<<grid_for(rows, kThreads, dev.index), kThreads, 0, s>>>(D.data<T>(), g.data<T>(), out.data<T>(), rows, d.E);
    KS_CUDA_LAUNCH_CHECK();
    if (d.S > 0) {
      Dims dkv = d;
      const Launch l = plan(sdpa_backward_kv<T>, kv_shared, dkv, true, pairs / d.group, sizeof(T), dev.index, op,
                            head_sizes(d));  // one block per (b, key/value head, key tile)
      sdpa_backward_kv<T><<<l.grid, kBlock, l.bytes, s>>>(dk.data<T>(), dv.data<T>(), q.data<T>(), k.data<T>(),
                                                          v.data<T>(), g.data<T>(), lse.data<T>(), D.data<T>(), padp,
                                                          dkv, prm);
      KS_CUDA_LAUNCH_CHECK();
    }
    Dims dq_d = d;
    const Launch l = plan(sdpa_backward_q<T>, q_shared, dq_d, false, pairs, sizeof(T), dev.index, op, head_sizes(d));
    sdpa_backward_q<T><<<l.grid, kBlock, l.bytes, s>>>(dq.data<T>(), q.data<T>(), k.data<T>(), v.data<T>(), g.data<T>(),
                                                       lse.data<T>(), D.data<T>(), padp, dq_d, prm);
    KS_CUDA_LAUNCH_CHECK();
  });
}

}  // namespace
KS_REGISTER_KERNEL(sdpa_forward_kernel, CUDA, through_float32::sdpa_forward<sdpa_forward_cuda>);
KS_REGISTER_KERNEL(sdpa_backward_kernel, CUDA, through_float32::sdpa_backward<sdpa_backward_cuda>);
}  // namespace ks::cuda
