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
// Arithmetic in the input dtype (float32 or float64). The dropout factor of
// element n of the (B, h, T, S) weights comes from Philox block
// first_block + n / 4, word n % 4, as ops/cuda/dropout.cu draws it.
// Inputs are made contiguous at entry; offsets are int64.
#include <algorithm>
#include <climits>
#include <cmath>

#include "core/copy.h"
#include "core/cuda/loops.cuh"
#include "core/random_values.h"
#include "ops/attention.h"
#include "ops/attention_formulas.h"
#include "ops/cuda/block_reduce.cuh"

namespace ks::cuda {
namespace {

using namespace attention_formulas;  // key_end, weight_index, drop_factor

constexpr int kWarps = 4;
constexpr int kBlock = kWarps * kWarp;  // threads per block
constexpr int kBC = kWarp;              // keys per tile: one per lane

struct Dims {
  int64_t H, T, S, P, E;
  int64_t tiles;  // query tiles (forward, dQ) or key tiles (dK/dV) per (b, h)
  int rw;         // query rows per warp
};

template <class T>
__device__ inline T neg_inf() {
  return -INFINITY;
}

__device__ inline float dexp(float x) { return expf(x); }
__device__ inline double dexp(double x) { return exp(x); }
__device__ inline float dlog(float x) { return logf(x); }
__device__ inline double dlog(double x) { return log(x); }

// Whether query i sees key j (j < S assumed).
__device__ inline bool sees(const SdpaParams& prm, const bool* pad_b, int64_t i, int64_t j) {
  if (prm.causal && j > prm.causal_offset + i) return false;
  return !(pad_b && pad_b[j]);
}

// Rows (n, w) to shared memory with row stride ld.
template <class T>
__device__ inline void load_rows(T* dst, int64_t ld, const T* src, int64_t n, int64_t w) {
  for (int64_t x = threadIdx.x; x < n * w; x += kBlock) dst[(x / w) * ld + x % w] = src[x];
}

template <class T>
__device__ inline T dot(const T* a, const T* b, int64_t n) {
  T acc = 0;
  for (int64_t x = 0; x < n; ++x) acc += a[x] * b[x];
  return acc;
}

// --- forward ---
// Shared: Q (BR, p) | K (32, p + 1) | V (32, e) | P (BR, 32) | O (BR, e) | m (BR) | l (BR)
size_t forward_shared(int64_t P, int64_t E, int rw, size_t bytes) {
  const int64_t BR = kWarps * rw;
  return size_t(BR * P + kBC * (P + 1) + kBC * E + BR * kBC + BR * E + 2 * BR) * bytes;
}

template <class T>
__global__ void __launch_bounds__(kBlock) sdpa_forward(T* out, T* lse, const T* Q, const T* K, const T* V,
                                                        const bool* pad, Dims d, SdpaParams prm) {
  extern __shared__ __align__(16) unsigned char smem[];
  const int BR = kWarps * d.rw;
  const int64_t P = d.P, E = d.E, KP = P + 1;
  T* Qs = reinterpret_cast<T*>(smem);
  T *Ks = Qs + BR * P, *Vs = Ks + kBC * KP, *Ps = Vs + kBC * E, *Os = Ps + BR * kBC, *ms = Os + BR * E,
    *ls = ms + BR;
  const int64_t pair = blockIdx.x / d.tiles, i0 = (blockIdx.x % d.tiles) * BR;
  const int rows = int(min(int64_t(BR), d.T - i0));
  const int tid = threadIdx.x, warp = tid / kWarp, lane = tid % kWarp;
  const bool* pad_b = pad ? pad + (pair / d.H) * d.S : nullptr;
  const T scale = T(prm.scale);

  load_rows(Qs, P, Q + (pair * d.T + i0) * P, rows, P);
  for (int64_t x = tid; x < BR * E; x += kBlock) Os[x] = T(0);
  for (int x = tid; x < BR; x += kBlock) {
    ms[x] = neg_inf<T>();
    ls[x] = T(0);
  }
  const int64_t jend = key_end(prm, i0 + rows, d.S);
  for (int64_t j0 = 0; j0 < jend; j0 += kBC) {
    const int cols = int(min(int64_t(kBC), jend - j0));
    __syncthreads();  // the previous tile is no longer read
    load_rows(Ks, KP, K + (pair * d.S + j0) * P, cols, P);
    load_rows(Vs, E, V + (pair * d.S + j0) * E, cols, E);
    __syncthreads();
    for (int rr = 0; rr < d.rw; ++rr) {
      const int r = warp * d.rw + rr;
      if (r >= rows) break;  // uniform across the warp
      const int64_t i = i0 + r;
      const bool visible = lane < cols && sees(prm, pad_b, i, j0 + lane);
      const T s = visible ? dot(Qs + r * P, Ks + lane * KP, P) * scale : neg_inf<T>();
      const T m_old = ms[r];
      const T m_new = max(m_old, warp_max(s));
      if (m_new == neg_inf<T>()) continue;  // the row has seen nothing yet (uniform)
      T p = visible ? dexp(s - m_new) : T(0);
      const T sum = warp_sum(p);
      const T alpha = dexp(m_old - m_new);  // 0 while m_old = -inf
      if (prm.dropout && visible) p *= drop_factor<T>(prm, weight_index(pair, d.T, d.S, i, j0 + lane));
      Ps[r * kBC + lane] = p;
      __syncwarp();
      for (int64_t e = lane; e < E; e += kWarp) {
        T acc = 0;
        for (int c = 0; c < cols; ++c) acc += Ps[r * kBC + c] * Vs[c * E + e];
        Os[r * E + e] = Os[r * E + e] * alpha + acc;
      }
      __syncwarp();  // every lane has read ms[r] and Ps's row
      if (lane == 0) {
        ms[r] = m_new;
        ls[r] = ls[r] * alpha + sum;
      }
      __syncwarp();
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
// D_i = dO_i · O_i, one thread per row.
template <class T>
__global__ void sdpa_row_dot(T* D, const T* G, const T* O, int64_t rows, int64_t E) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < rows; i += int64_t(gridDim.x) * blockDim.x)
    D[i] = dot(G + i * E, O + i * E, E);
}

// For row r (query i) and lane's key j0 + lane: W = P·f and dS = P·(f·dp − D),
// into Ws, dSs (row stride 32); zeros where the key is hidden or absent.
template <class T>
__device__ inline void scores_backward(T* Ws, T* dSs, const T* Qr, const T* Gr, const T* Ks, const T* Vs, int64_t KP,
                                       int64_t VP, int64_t P, int64_t E, int cols, int64_t pair, int64_t i,
                                       int64_t j0, T lse, T Di, const bool* pad_b, const Dims& d,
                                       const SdpaParams& prm) {
  const int lane = threadIdx.x % kWarp;
  T w = 0, ds = 0;
  if (lane < cols && lse != neg_inf<T>() && sees(prm, pad_b, i, j0 + lane)) {
    const T p = dexp(dot(Qr, Ks + lane * KP, P) * T(prm.scale) - lse);
    const T f = prm.dropout ? drop_factor<T>(prm, uint64_t((pair * d.T + i) * d.S + j0 + lane)) : T(1);
    const T dp = dot(Gr, Vs + lane * VP, E);
    w = p * f;
    ds = p * (f * dp - Di);
  }
  if (Ws) Ws[lane] = w;
  dSs[lane] = ds;
}

// Shared: K (32, p + 1) | V (32, e + 1) | dK (32, p) | dV (32, e) | Q (BR, p) | dO (BR, e) | W, dS (BR, 32)
size_t kv_shared(int64_t P, int64_t E, int rw, size_t bytes) {
  const int64_t BR = kWarps * rw;
  return size_t(kBC * (P + 1) + kBC * (E + 1) + kBC * P + kBC * E + BR * P + BR * E + 2 * BR * kBC) * bytes;
}

template <class T>
__global__ void __launch_bounds__(kBlock) sdpa_backward_kv(T* dK, T* dV, const T* Q, const T* K, const T* V,
                                                            const T* G, const T* L, const T* D, const bool* pad,
                                                            Dims d, SdpaParams prm) {
  extern __shared__ __align__(16) unsigned char smem[];
  const int BR = kWarps * d.rw;
  const int64_t P = d.P, E = d.E, KP = P + 1, VP = E + 1;
  T* Ks = reinterpret_cast<T*>(smem);
  T *Vs = Ks + kBC * KP, *dKs = Vs + kBC * VP, *dVs = dKs + kBC * P, *Qs = dVs + kBC * E, *Gs = Qs + BR * P,
    *Ws = Gs + BR * E, *dSs = Ws + BR * kBC;
  const int64_t pair = blockIdx.x / d.tiles, j0 = (blockIdx.x % d.tiles) * kBC;
  const int cols = int(min(int64_t(kBC), d.S - j0));
  const int tid = threadIdx.x, warp = tid / kWarp;
  const bool* pad_b = pad ? pad + (pair / d.H) * d.S : nullptr;
  const T scale = T(prm.scale);

  load_rows(Ks, KP, K + (pair * d.S + j0) * P, cols, P);
  load_rows(Vs, VP, V + (pair * d.S + j0) * E, cols, E);
  for (int64_t x = tid; x < kBC * P; x += kBlock) dKs[x] = T(0);
  for (int64_t x = tid; x < kBC * E; x += kBlock) dVs[x] = T(0);
  // Under the causal rule, key j0 is seen from query j0 − offset on.
  const int64_t first = prm.causal ? min(max(j0 - prm.causal_offset, int64_t(0)), d.T) : 0;
  for (int64_t i0 = first / BR * BR; i0 < d.T; i0 += BR) {
    const int rows = int(min(int64_t(BR), d.T - i0));
    __syncthreads();  // the previous query tile is no longer read
    load_rows(Qs, P, Q + (pair * d.T + i0) * P, rows, P);
    load_rows(Gs, E, G + (pair * d.T + i0) * E, rows, E);
    __syncthreads();
    for (int rr = 0; rr < d.rw; ++rr) {
      const int r = warp * d.rw + rr;
      if (r >= rows) break;
      const int64_t i = i0 + r;
      scores_backward(Ws + r * kBC, dSs + r * kBC, Qs + r * P, Gs + r * E, Ks, Vs, KP, VP, P, E, cols, pair, i, j0,
                      L[pair * d.T + i], D[pair * d.T + i], pad_b, d, prm);
    }
    __syncthreads();
    // dV_c += Σ_r W_rc dO_r;  dK_c += scale · Σ_r dS_rc Q_r  (r in order: deterministic)
    for (int64_t x = tid; x < cols * E; x += kBlock) {
      const int64_t c = x / E, e = x % E;
      T acc = 0;
      for (int r = 0; r < rows; ++r) acc += Ws[r * kBC + c] * Gs[r * E + e];
      dVs[x] += acc;
    }
    for (int64_t x = tid; x < cols * P; x += kBlock) {
      const int64_t c = x / P, a = x % P;
      T acc = 0;
      for (int r = 0; r < rows; ++r) acc += dSs[r * kBC + c] * Qs[r * P + a];
      dKs[x] += acc * scale;
    }
  }
  __syncthreads();
  for (int64_t x = tid; x < cols * P; x += kBlock) dK[(pair * d.S + j0) * P + x] = dKs[x];
  for (int64_t x = tid; x < cols * E; x += kBlock) dV[(pair * d.S + j0) * E + x] = dVs[x];
}

// Shared: Q (BR, p) | dO (BR, e) | dQ (BR, p) | K (32, p + 1) | V (32, e + 1) | dS (BR, 32)
size_t q_shared(int64_t P, int64_t E, int rw, size_t bytes) {
  const int64_t BR = kWarps * rw;
  return size_t(2 * BR * P + BR * E + kBC * (P + 1) + kBC * (E + 1) + BR * kBC) * bytes;
}

template <class T>
__global__ void __launch_bounds__(kBlock) sdpa_backward_q(T* dQ, const T* Q, const T* K, const T* V, const T* G,
                                                           const T* L, const T* D, const bool* pad, Dims d,
                                                           SdpaParams prm) {
  extern __shared__ __align__(16) unsigned char smem[];
  const int BR = kWarps * d.rw;
  const int64_t P = d.P, E = d.E, KP = P + 1, VP = E + 1;
  T* Qs = reinterpret_cast<T*>(smem);
  T *Gs = Qs + BR * P, *dQs = Gs + BR * E, *Ks = dQs + BR * P, *Vs = Ks + kBC * KP, *dSs = Vs + kBC * VP;
  const int64_t pair = blockIdx.x / d.tiles, i0 = (blockIdx.x % d.tiles) * BR;
  const int rows = int(min(int64_t(BR), d.T - i0));
  const int tid = threadIdx.x, warp = tid / kWarp;
  const bool* pad_b = pad ? pad + (pair / d.H) * d.S : nullptr;
  const T scale = T(prm.scale);

  load_rows(Qs, P, Q + (pair * d.T + i0) * P, rows, P);
  load_rows(Gs, E, G + (pair * d.T + i0) * E, rows, E);
  for (int64_t x = tid; x < BR * P; x += kBlock) dQs[x] = T(0);
  const int64_t jend = key_end(prm, i0 + rows, d.S);
  for (int64_t j0 = 0; j0 < jend; j0 += kBC) {
    const int cols = int(min(int64_t(kBC), jend - j0));
    __syncthreads();  // the previous key tile is no longer read
    load_rows(Ks, KP, K + (pair * d.S + j0) * P, cols, P);
    load_rows(Vs, VP, V + (pair * d.S + j0) * E, cols, E);
    __syncthreads();
    for (int rr = 0; rr < d.rw; ++rr) {
      const int r = warp * d.rw + rr;
      if (r >= rows) break;
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
  for (int64_t x = tid; x < rows * P; x += kBlock) dQ[(pair * d.T + i0) * P + x] = dQs[x];
}

// --- launches ---
int shared_optin(int device) {
  int v = 0;
  KS_CUDA_CHECK(cudaDeviceGetAttribute(&v, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  return v;
}

// The most rows per warp (4, 2, 1) whose shared memory fits the device.
template <class SharedFn>
int rows_per_warp(SharedFn shared, int64_t P, int64_t E, size_t bytes, int device, const char* op) {
  const size_t limit = size_t(shared_optin(device));
  for (int rw : {4, 2, 1})
    if (shared(P, E, rw, bytes) <= limit) return rw;
  KS_CHECK(false, op, ": head sizes p = ", P, ", e = ", E, " need ", shared(P, E, 1, bytes),
           " bytes of shared memory per block, the device allows ", limit);
  return 0;
}

template <class Kernel>
void allow_shared(Kernel kernel, size_t bytes) {
  KS_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
}

unsigned grid_of(int64_t pairs, int64_t tiles, const char* op) {
  KS_CHECK(pairs * tiles <= int64_t(INT_MAX), op, ": ", pairs * tiles, " blocks exceed the grid limit");
  return unsigned(pairs * tiles);
}

Tensor contiguous_or_undefined(const Tensor& t) { return t.defined() ? contiguous_raw(t) : Tensor(); }

void sdpa_forward_cuda(const Tensor& out, const Tensor& lse, const Tensor& q_in, const Tensor& k_in,
                       const Tensor& v_in, const Tensor& pad_in, const SdpaParams& prm) {
  const Tensor q = contiguous_raw(q_in), k = contiguous_raw(k_in), v = contiguous_raw(v_in);
  const Tensor pad = contiguous_or_undefined(pad_in);
  const Device dev = out.device();
  constexpr const char* op = "scaled_dot_product_attention";
  dispatch_floating(out.dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    DeviceGuard guard(dev);
    Dims d{q.size(1), q.size(2), k.size(2), q.size(3), v.size(3), 0, 0};
    d.rw = rows_per_warp(forward_shared, d.P, d.E, sizeof(T), dev.index, op);
    d.tiles = (d.T + kWarps * d.rw - 1) / (kWarps * d.rw);
    const size_t bytes = forward_shared(d.P, d.E, d.rw, sizeof(T));
    allow_shared(sdpa_forward<T>, bytes);
    sdpa_forward<T><<<grid_of(q.size(0) * d.H, d.tiles, op), kBlock, bytes, stream(dev)>>>(
        out.data<T>(), lse.data<T>(), q.data<T>(), k.data<T>(), v.data<T>(),
        pad.defined() ? pad.data<bool>() : nullptr, d, prm);
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
    Dims d{q.size(1), q.size(2), k.size(2), q.size(3), v.size(3), 0, 0};
    const int64_t rows = pairs * d.T;
    sdpa_row_dot<T><<<grid_for(rows, kThreads, dev.index), kThreads, 0, s>>>(D.data<T>(), g.data<T>(),
                                                                            out.data<T>(), rows, d.E);
    KS_CUDA_LAUNCH_CHECK();
    if (d.S > 0) {
      Dims dkv = d;
      dkv.rw = rows_per_warp(kv_shared, d.P, d.E, sizeof(T), dev.index, op);
      dkv.tiles = (d.S + kBC - 1) / kBC;
      const size_t bytes = kv_shared(d.P, d.E, dkv.rw, sizeof(T));
      allow_shared(sdpa_backward_kv<T>, bytes);
      sdpa_backward_kv<T><<<grid_of(pairs, dkv.tiles, op), kBlock, bytes, s>>>(
          dk.data<T>(), dv.data<T>(), q.data<T>(), k.data<T>(), v.data<T>(), g.data<T>(), lse.data<T>(),
          D.data<T>(), padp, dkv, prm);
      KS_CUDA_LAUNCH_CHECK();
    }
    Dims dq_d = d;
    dq_d.rw = rows_per_warp(q_shared, d.P, d.E, sizeof(T), dev.index, op);
    dq_d.tiles = (d.T + kWarps * dq_d.rw - 1) / (kWarps * dq_d.rw);
    const size_t bytes = q_shared(d.P, d.E, dq_d.rw, sizeof(T));
    allow_shared(sdpa_backward_q<T>, bytes);
    sdpa_backward_q<T><<<grid_of(pairs, dq_d.tiles, op), kBlock, bytes, s>>>(
        dq.data<T>(), q.data<T>(), k.data<T>(), v.data<T>(), g.data<T>(), lse.data<T>(), D.data<T>(), padp, dq_d,
        prm);
    KS_CUDA_LAUNCH_CHECK();
  });
}

}  // namespace
KS_REGISTER_KERNEL(sdpa_forward_kernel, CUDA, sdpa_forward_cuda);
KS_REGISTER_KERNEL(sdpa_backward_kernel, CUDA, sdpa_backward_cuda);
}  // namespace ks::cuda
