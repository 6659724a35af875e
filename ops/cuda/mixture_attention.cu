// ops/cuda/mixture_attention.cu — CUDA kernels of mixture_attention (fused
// MGK attention; math in ops/mixture_attention.h, per-key formulas shared
// with the CPU twin ops/cpu/mixture_attention.cpp in
// ops/mixture_attention_formulas.h). The (T, M, S) logits only ever exist one
// (query tile, key tile) block at a time, in shared memory.
//
// Written for correctness first, on the layout of ops/cuda/attention.cu: a
// block is 4 warps; a query tile is 4·rw rows (rw rows per warp, 4, 2 or 1:
// the most that fits shared memory); a key tile is 32 keys, one per lane.
// Lane c of the warp owning row r computes the M logits of key c as dot
// products over p from shared memory (K rows padded to p + 1 against bank
// conflicts), keeping them in shared memory for the row's other passes.
//   forward   one block per (b, h, query tile): the online softmax over key
//             tiles with the running max and sum per row; soft-E totals per
//             thread in double, summed per block in thread order into a
//             (blocks, M) buffer that a second kernel adds in tile order.
//   backward  D = rowsum(dO∘O); then dK/dV/dbias: one block per (b, h, key
//             tile) looping over the query tiles that see it; dQ: one block
//             per (b, h, query tile) looping over its key tiles. Both
//             recompute P_r = exp(x_r − lse) and dx_r = P_r·(f·dO·v − D);
//             sums in a fixed order, no atomics (deterministic).
// Arithmetic in the input dtype; totals and nothing else in double. Inputs
// are made contiguous at entry (bias too: (B, h, M, S) is small); offsets are
// int64. Not here: tensor-core tiles or any tuning (a later step).
#include <algorithm>
#include <climits>
#include <cmath>

#include "core/copy.h"
#include "core/cuda/loops.cuh"
#include "ops/cuda/block_reduce.cuh"
#include "ops/mixture_attention.h"
#include "ops/mixture_attention_formulas.h"

namespace ks::cuda {
namespace {

using namespace mixture_attention_formulas;

constexpr int kWarps = 4;
constexpr int kBlock = kWarps * kWarp;  // threads per block
constexpr int kBC = kWarp;              // keys per tile: one per lane

struct Dims {
  int64_t H, T, S, M, P, E;
  int64_t tiles;  // query tiles (forward, dQ) or key tiles (dK/dV) per (b, h)
  int rw;         // query rows per warp
};

template <class T>
__device__ inline T neg_inf() {
  return -INFINITY;
}

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

// The key tile's M components: K (M, 32, p + 1) and bias (M, 32) from k (pair, M, S, p), bias (pair, M, S).
template <class T>
__device__ inline void load_keys(T* Ks, T* bs, const T* K, const T* bias, int64_t pair, int64_t j0, int cols,
                                 const Dims& d) {
  const int64_t KP = d.P + 1;
  for (int64_t r = 0; r < d.M; ++r) {
    load_rows(Ks + r * kBC * KP, KP, K + ((pair * d.M + r) * d.S + j0) * d.P, cols, d.P);
    for (int x = threadIdx.x; x < cols; x += kBlock) bs[r * kBC + x] = bias[(pair * d.M + r) * d.S + j0 + x];
  }
}

template <class T>
__device__ inline T dot(const T* a, const T* b, int64_t n) {
  T acc = 0;
  for (int64_t x = 0; x < n; ++x) acc += a[x] * b[x];
  return acc;
}

// Lane's key: its M logits into xs[r·32 + lane] (-inf if hidden); returns max_r x.
template <class T>
__device__ inline T key_logits(T* xs, const T* Qr, const T* Ks, const T* bs, bool visible, const Dims& d, T scale) {
  const int lane = threadIdx.x % kWarp;
  const int64_t KP = d.P + 1;
  T mx = neg_inf<T>();
  for (int64_t r = 0; r < d.M; ++r) {
    const T x = visible ? logit(dot(Qr, Ks + (r * kBC + lane) * KP, d.P) * scale, bs[r * kBC + lane]) : neg_inf<T>();
    xs[r * kBC + lane] = x;
    mx = max(mx, x);
  }
  return mx;
}

// --- forward ---
// Shared: tot (kBlock·M doubles) | Q (BR, p) | K (M, 32, p + 1) | bias (M, 32) | V (32, e) | W (BR, 32) |
// X (BR, M, 32) | O (BR, e) | m (BR) | l (BR)
size_t forward_shared(const Dims& d, int rw, size_t bytes) {
  const int64_t BR = kWarps * rw, M = d.M;
  return size_t(kBlock * M) * sizeof(double) +
         size_t(BR * d.P + M * kBC * (d.P + 1) + M * kBC + kBC * d.E + BR * kBC + BR * M * kBC + BR * d.E + 2 * BR) *
             bytes;
}

template <class T>
__global__ void __launch_bounds__(kBlock)
    mgk_forward(T* out, T* lse, double* partial, const T* Q, const T* K, const T* bias, const T* V, const bool* pad,
                Dims d, SdpaParams prm, bool hard) {
  extern __shared__ __align__(16) unsigned char smem[];
  const int BR = kWarps * d.rw;
  const int64_t P = d.P, E = d.E, M = d.M;
  double* tot = reinterpret_cast<double*>(smem);
  T* Qs = reinterpret_cast<T*>(tot + kBlock * M);
  T *Ks = Qs + BR * P, *bs = Ks + M * kBC * (P + 1), *Vs = bs + M * kBC, *Ws = Vs + kBC * E, *Xs = Ws + BR * kBC,
    *Os = Xs + BR * M * kBC, *ms = Os + BR * E, *ls = ms + BR;
  const int64_t pair = blockIdx.x / d.tiles, i0 = (blockIdx.x % d.tiles) * BR;
  const int rows = int(min(int64_t(BR), d.T - i0));
  const int tid = threadIdx.x, warp = tid / kWarp, lane = tid % kWarp;
  const bool* pad_b = pad ? pad + (pair / d.H) * d.S : nullptr;
  const T scale = T(prm.scale);

  for (int64_t r = 0; r < M; ++r) tot[tid * M + r] = 0;
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
    load_keys(Ks, bs, K, bias, pair, j0, cols, d);
    load_rows(Vs, E, V + (pair * d.S + j0) * E, cols, E);
    __syncthreads();
    for (int rr = 0; rr < d.rw; ++rr) {
      const int r = warp * d.rw + rr;
      if (r >= rows) break;  // uniform across the warp
      const int64_t i = i0 + r;
      T* xs = Xs + r * M * kBC;
      const bool visible = lane < cols && sees(prm, pad_b, i, j0 + lane);
      const T mx = key_logits(xs, Qs + r * P, Ks, bs, visible, d, scale);
      if (partial && mx != neg_inf<T>()) {  // soft-E: this key's γ_r
        if (hard) {
          for (int64_t c = 0; c < M; ++c)
            if (xs[c * kBC + lane] == mx) {
              tot[tid * M + c] += 1;
              break;
            }
        } else {
          T u = 0;
          for (int64_t c = 0; c < M; ++c) u += responsibility_term(xs[c * kBC + lane], mx);
          const T inv = responsibility_norm(u);
          for (int64_t c = 0; c < M; ++c) tot[tid * M + c] += double(responsibility_term(xs[c * kBC + lane], mx) * inv);
        }
      }
      const T m_old = ms[r];
      const T m_new = max(m_old, warp_max(mx));
      if (m_new == neg_inf<T>()) continue;  // the row has seen nothing yet (uniform)
      T w = 0;
      if (hard) {
        w = forward_term(mx, m_new);
      } else {
        for (int64_t c = 0; c < M; ++c) w += forward_term(xs[c * kBC + lane], m_new);
      }
      const T sum = warp_sum(w);
      const T alpha = rescale(m_old, m_new);
      if (prm.dropout && visible) w *= drop_factor<T>(prm, weight_index(pair, d.T, d.S, i, j0 + lane));
      Ws[r * kBC + lane] = lane < cols ? w : T(0);
      __syncwarp();
      for (int64_t e = lane; e < E; e += kWarp) {
        T acc = 0;
        for (int c = 0; c < cols; ++c) acc += Ws[r * kBC + c] * Vs[c * E + e];
        Os[r * E + e] = Os[r * E + e] * alpha + acc;
      }
      __syncwarp();  // every lane has read ms[r] and Ws's row
      if (lane == 0) {
        ms[r] = m_new;
        ls[r] = ls[r] * alpha + sum;
      }
      __syncwarp();
    }
  }
  __syncthreads();
  T* orow = out + (pair * d.T + i0) * E;
  for (int64_t x = tid; x < rows * E; x += kBlock) orow[x] = Os[x] * out_norm(ls[x / E]);
  for (int r = tid; r < rows; r += kBlock) lse[pair * d.T + i0 + r] = row_lse(ms[r], ls[r]);
  if (partial)
    for (int64_t c = tid; c < M; c += kBlock) {
      double s = 0;
      for (int t = 0; t < kBlock; ++t) s += tot[t * M + c];
      partial[int64_t(blockIdx.x) * M + c] = s;
    }
}

// totals (pair, r) = Σ over the pair's query tiles, in order.
template <class T>
__global__ void mgk_totals(T* totals, const double* partial, int64_t pairs, int64_t tiles, int64_t M) {
  for (int64_t x = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; x < pairs * M; x += int64_t(gridDim.x) * blockDim.x) {
    const int64_t pair = x / M, r = x % M;
    double s = 0;
    for (int64_t t = 0; t < tiles; ++t) s += partial[(pair * tiles + t) * M + r];
    totals[x] = T(s);
  }
}

// --- backward ---
// D_i = dO_i · O_i, one thread per row.
template <class T>
__global__ void mgk_row_dot(T* D, const T* G, const T* O, int64_t rows, int64_t E) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < rows; i += int64_t(gridDim.x) * blockDim.x)
    D[i] = dot(G + i * E, O + i * E, E);
}

// Row r (query i), lane's key j0 + lane: xs[c·32 + lane] ← dx_c = P_c·(f·dp − D), and
// *w ← A·f; zeros where the key is hidden or absent.
template <class T>
__device__ inline void key_backward(T* xs, T* w, const T* Qr, const T* Gr, const T* Ks, const T* bs, const T* Vs,
                                    int64_t VP, int cols, int64_t pair, int64_t i, int64_t j0, T lse, T Di,
                                    const bool* pad_b, const Dims& d, const SdpaParams& prm, bool hard) {
  const int lane = threadIdx.x % kWarp;
  const bool visible = lane < cols && lse != neg_inf<T>() && sees(prm, pad_b, i, j0 + lane);
  const T mx = key_logits(xs, Qr, Ks, bs, visible, d, T(prm.scale));
  T a = 0;
  if (hard) {
    const T pa = visible ? component_prob(mx, lse) : T(0);
    bool chosen = false;
    for (int64_t c = 0; c < d.M; ++c) {
      const bool pick = !chosen && xs[c * kBC + lane] == mx;
      chosen = chosen || pick;
      xs[c * kBC + lane] = pick ? pa : T(0);
    }
    a = pa;
  } else {
    for (int64_t c = 0; c < d.M; ++c) {
      const T p = visible ? component_prob(xs[c * kBC + lane], lse) : T(0);
      xs[c * kBC + lane] = p;
      a += p;
    }
  }
  T f = 1, dp = 0;
  if (visible) {
    f = prm.dropout ? drop_factor<T>(prm, weight_index(pair, d.T, d.S, i, j0 + lane)) : T(1);
    dp = dot(Gr, Vs + lane * VP, d.E);
  }
  for (int64_t c = 0; c < d.M; ++c) xs[c * kBC + lane] = visible ? logit_grad(xs[c * kBC + lane], f * dp, Di) : T(0);
  if (w) *w = visible ? a * f : T(0);
}

// Shared: K (M, 32, p + 1) | bias (M, 32) | V (32, e + 1) | dK (M, 32, p) | dV (32, e) | db (M, 32) |
// Q (BR, p) | dO (BR, e) | W (BR, 32) | dX (BR, M, 32)
size_t kv_shared(const Dims& d, int rw, size_t bytes) {
  const int64_t BR = kWarps * rw, M = d.M;
  return size_t(M * kBC * (d.P + 1) + M * kBC + kBC * (d.E + 1) + M * kBC * d.P + kBC * d.E + M * kBC + BR * d.P +
                BR * d.E + BR * kBC + BR * M * kBC) *
         bytes;
}

template <class T>
__global__ void __launch_bounds__(kBlock)
    mgk_backward_kv(T* dK, T* dB, T* dV, const T* Q, const T* K, const T* bias, const T* V, const T* G, const T* L,
                    const T* D, const bool* pad, Dims d, SdpaParams prm, bool hard) {
  extern __shared__ __align__(16) unsigned char smem[];
  const int BR = kWarps * d.rw;
  const int64_t P = d.P, E = d.E, M = d.M, VP = E + 1;
  T* Ks = reinterpret_cast<T*>(smem);
  T *bs = Ks + M * kBC * (P + 1), *Vs = bs + M * kBC, *dKs = Vs + kBC * VP, *dVs = dKs + M * kBC * P,
    *dbs = dVs + kBC * E, *Qs = dbs + M * kBC, *Gs = Qs + BR * P, *Ws = Gs + BR * E, *Xs = Ws + BR * kBC;
  const int64_t pair = blockIdx.x / d.tiles, j0 = (blockIdx.x % d.tiles) * kBC;
  const int cols = int(min(int64_t(kBC), d.S - j0));
  const int tid = threadIdx.x, warp = tid / kWarp;
  const bool* pad_b = pad ? pad + (pair / d.H) * d.S : nullptr;
  const T scale = T(prm.scale);

  load_keys(Ks, bs, K, bias, pair, j0, cols, d);
  load_rows(Vs, VP, V + (pair * d.S + j0) * E, cols, E);
  for (int64_t x = tid; x < M * kBC * P; x += kBlock) dKs[x] = T(0);
  for (int64_t x = tid; x < kBC * E; x += kBlock) dVs[x] = T(0);
  for (int64_t x = tid; x < M * kBC; x += kBlock) dbs[x] = T(0);
  for (int64_t i0 = first_query(prm, j0, d.T) / BR * BR; i0 < d.T; i0 += BR) {
    const int rows = int(min(int64_t(BR), d.T - i0));
    __syncthreads();  // the previous query tile is no longer read
    load_rows(Qs, P, Q + (pair * d.T + i0) * P, rows, P);
    load_rows(Gs, E, G + (pair * d.T + i0) * E, rows, E);
    __syncthreads();
    for (int rr = 0; rr < d.rw; ++rr) {
      const int r = warp * d.rw + rr;
      if (r >= rows) break;
      const int64_t i = i0 + r;
      key_backward(Xs + r * M * kBC, Ws + r * kBC + tid % kWarp, Qs + r * P, Gs + r * E, Ks, bs, Vs, VP, cols, pair,
                   i, j0, L[pair * d.T + i], D[pair * d.T + i], pad_b, d, prm, hard);
    }
    __syncthreads();
    // dV_c += Σ_r W_rc dO_r;  dK_{m,c} += scale · Σ_r dx_{r,m,c} Q_r;  db_{m,c} += Σ_r dx_{r,m,c}  (r in order)
    for (int64_t x = tid; x < cols * E; x += kBlock) {
      const int64_t c = x / E, e = x % E;
      T acc = 0;
      for (int r = 0; r < rows; ++r) acc += Ws[r * kBC + c] * Gs[r * E + e];
      dVs[x] += acc;
    }
    for (int64_t x = tid; x < M * cols * P; x += kBlock) {
      const int64_t m = x / (cols * P), c = (x / P) % cols, a = x % P;
      T acc = 0;
      for (int r = 0; r < rows; ++r) acc += Xs[(r * M + m) * kBC + c] * Qs[r * P + a];
      dKs[(m * kBC + c) * P + a] += acc * scale;
    }
    for (int64_t x = tid; x < M * cols; x += kBlock) {
      const int64_t m = x / cols, c = x % cols;
      T acc = 0;
      for (int r = 0; r < rows; ++r) acc += Xs[(r * M + m) * kBC + c];
      dbs[m * kBC + c] += acc;
    }
  }
  __syncthreads();
  for (int64_t x = tid; x < M * cols * P; x += kBlock) {
    const int64_t m = x / (cols * P), c = (x / P) % cols, a = x % P;
    dK[((pair * M + m) * d.S + j0 + c) * P + a] = dKs[(m * kBC + c) * P + a];
  }
  for (int64_t x = tid; x < M * cols; x += kBlock) {
    const int64_t m = x / cols, c = x % cols;
    dB[(pair * M + m) * d.S + j0 + c] = dbs[m * kBC + c];
  }
  for (int64_t x = tid; x < cols * E; x += kBlock) dV[(pair * d.S + j0) * E + x] = dVs[x];
}

// Shared: Q (BR, p) | dO (BR, e) | dQ (BR, p) | K (M, 32, p + 1) | bias (M, 32) | V (32, e + 1) | dX (BR, M, 32)
size_t q_shared(const Dims& d, int rw, size_t bytes) {
  const int64_t BR = kWarps * rw, M = d.M;
  return size_t(2 * BR * d.P + BR * d.E + M * kBC * (d.P + 1) + M * kBC + kBC * (d.E + 1) + BR * M * kBC) * bytes;
}

template <class T>
__global__ void __launch_bounds__(kBlock)
    mgk_backward_q(T* dQ, const T* Q, const T* K, const T* bias, const T* V, const T* G, const T* L, const T* D,
                   const bool* pad, Dims d, SdpaParams prm, bool hard) {
  extern __shared__ __align__(16) unsigned char smem[];
  const int BR = kWarps * d.rw;
  const int64_t P = d.P, E = d.E, M = d.M, KP = P + 1, VP = E + 1;
  T* Qs = reinterpret_cast<T*>(smem);
  T *Gs = Qs + BR * P, *dQs = Gs + BR * E, *Ks = dQs + BR * P, *bs = Ks + M * kBC * KP, *Vs = bs + M * kBC,
    *Xs = Vs + kBC * VP;
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
    load_keys(Ks, bs, K, bias, pair, j0, cols, d);
    load_rows(Vs, VP, V + (pair * d.S + j0) * E, cols, E);
    __syncthreads();
    for (int rr = 0; rr < d.rw; ++rr) {
      const int r = warp * d.rw + rr;
      if (r >= rows) break;
      const int64_t i = i0 + r;
      key_backward<T>(Xs + r * M * kBC, nullptr, Qs + r * P, Gs + r * E, Ks, bs, Vs, VP, cols, pair, i, j0,
                      L[pair * d.T + i], D[pair * d.T + i], pad_b, d, prm, hard);
    }
    __syncthreads();
    // dQ_r += scale · Σ_m Σ_c dx_{r,m,c} K_{m,c}  (m, c in order)
    for (int64_t x = tid; x < rows * P; x += kBlock) {
      const int64_t r = x / P, a = x % P;
      T acc = 0;
      for (int64_t m = 0; m < M; ++m)
        for (int c = 0; c < cols; ++c) acc += Xs[(r * M + m) * kBC + c] * Ks[(m * kBC + c) * KP + a];
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
int rows_per_warp(SharedFn shared, const Dims& d, size_t bytes, int device, const char* op) {
  const size_t limit = size_t(shared_optin(device));
  for (int rw : {4, 2, 1})
    if (shared(d, rw, bytes) <= limit) return rw;
  KS_CHECK(false, op, ": M = ", d.M, " keys of head size p = ", d.P, " and e = ", d.E, " need ", shared(d, 1, bytes),
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

Dims dims_of(const Tensor& q, const Tensor& k, const Tensor& v) {
  return Dims{q.size(1), q.size(2), k.size(3), k.size(2), q.size(3), v.size(3), 0, 0};
}

void mixture_attention_forward_cuda(const Tensor& out, const Tensor& lse, const Tensor& totals, const Tensor& q_in,
                                    const Tensor& k_in, const Tensor& bias_in, const Tensor& v_in,
                                    const Tensor& pad_in, const SdpaParams& prm, bool hard) {
  const Tensor q = contiguous_raw(q_in), k = contiguous_raw(k_in), bias = contiguous_raw(bias_in);
  const Tensor v = contiguous_raw(v_in), pad = contiguous_or_undefined(pad_in);
  const Device dev = out.device();
  constexpr const char* op = "mixture_attention";
  const int64_t pairs = q.size(0) * q.size(1);
  dispatch_floating(out.dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    DeviceGuard guard(dev);
    const cudaStream_t s = stream(dev);
    Dims d = dims_of(q, k, v);
    d.rw = rows_per_warp(forward_shared, d, sizeof(T), dev.index, op);
    d.tiles = (d.T + kWarps * d.rw - 1) / (kWarps * d.rw);
    const size_t bytes = forward_shared(d, d.rw, sizeof(T));
    Tensor partial = totals.defined() ? Tensor::empty({pairs * d.tiles * d.M}, kFloat64, dev) : Tensor();
    allow_shared(mgk_forward<T>, bytes);
    mgk_forward<T><<<grid_of(pairs, d.tiles, op), kBlock, bytes, s>>>(
        out.data<T>(), lse.data<T>(), partial.defined() ? partial.data<double>() : nullptr, q.data<T>(), k.data<T>(),
        bias.data<T>(), v.data<T>(), pad.defined() ? pad.data<bool>() : nullptr, d, prm, hard);
    KS_CUDA_LAUNCH_CHECK();
    if (totals.defined()) {
      mgk_totals<T><<<grid_for(pairs * d.M, kThreads, dev.index), kThreads, 0, s>>>(
          totals.data<T>(), partial.data<double>(), pairs, d.tiles, d.M);
      KS_CUDA_LAUNCH_CHECK();
    }
  });
}

void mixture_attention_backward_cuda(const Tensor& dq, const Tensor& dk, const Tensor& dbias, const Tensor& dv,
                                     const Tensor& g_in, const Tensor& q_in, const Tensor& k_in, const Tensor& bias_in,
                                     const Tensor& v_in, const Tensor& out_in, const Tensor& lse,
                                     const Tensor& pad_in, const SdpaParams& prm, bool hard) {
  const Tensor q = contiguous_raw(q_in), k = contiguous_raw(k_in), bias = contiguous_raw(bias_in);
  const Tensor v = contiguous_raw(v_in), g = contiguous_raw(g_in), out = contiguous_raw(out_in);
  const Tensor pad = contiguous_or_undefined(pad_in);
  const Device dev = g.device();
  constexpr const char* op = "mixture_attention backward";
  const int64_t pairs = q.size(0) * q.size(1);
  Tensor D = Tensor::empty({pairs * q.size(2)}, g.dtype(), dev);
  dispatch_floating(g.dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    DeviceGuard guard(dev);
    const cudaStream_t s = stream(dev);
    const bool* padp = pad.defined() ? pad.data<bool>() : nullptr;
    Dims d = dims_of(q, k, v);
    const int64_t rows = pairs * d.T;
    mgk_row_dot<T><<<grid_for(rows, kThreads, dev.index), kThreads, 0, s>>>(D.data<T>(), g.data<T>(), out.data<T>(),
                                                                           rows, d.E);
    KS_CUDA_LAUNCH_CHECK();
    if (d.S > 0) {
      Dims dkv = d;
      dkv.rw = rows_per_warp(kv_shared, d, sizeof(T), dev.index, op);
      dkv.tiles = (d.S + kBC - 1) / kBC;
      const size_t bytes = kv_shared(dkv, dkv.rw, sizeof(T));
      allow_shared(mgk_backward_kv<T>, bytes);
      mgk_backward_kv<T><<<grid_of(pairs, dkv.tiles, op), kBlock, bytes, s>>>(
          dk.data<T>(), dbias.data<T>(), dv.data<T>(), q.data<T>(), k.data<T>(), bias.data<T>(), v.data<T>(),
          g.data<T>(), lse.data<T>(), D.data<T>(), padp, dkv, prm, hard);
      KS_CUDA_LAUNCH_CHECK();
    }
    Dims dq_d = d;
    dq_d.rw = rows_per_warp(q_shared, d, sizeof(T), dev.index, op);
    dq_d.tiles = (d.T + kWarps * dq_d.rw - 1) / (kWarps * dq_d.rw);
    const size_t bytes = q_shared(dq_d, dq_d.rw, sizeof(T));
    allow_shared(mgk_backward_q<T>, bytes);
    mgk_backward_q<T><<<grid_of(pairs, dq_d.tiles, op), kBlock, bytes, s>>>(
        dq.data<T>(), q.data<T>(), k.data<T>(), bias.data<T>(), v.data<T>(), g.data<T>(), lse.data<T>(), D.data<T>(),
        padp, dq_d, prm, hard);
    KS_CUDA_LAUNCH_CHECK();
  });
}

}  // namespace
KS_REGISTER_KERNEL(mixture_attention_forward_kernel, CUDA, mixture_attention_forward_cuda);
KS_REGISTER_KERNEL(mixture_attention_backward_kernel, CUDA, mixture_attention_backward_cuda);
}  // namespace ks::cuda
