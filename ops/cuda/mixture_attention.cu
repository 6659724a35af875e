// ops/cuda/mixture_attention.cu — CUDA kernels of mixture_attention (fused
// MGK attention; math in ops/mixture_attention.h, per-key formulas shared
// with the CPU twin ops/cpu/mixture_attention.cpp in
// ops/mixture_attention_formulas.h). The (T, M, S) logits only ever exist one
// (query tile, key tile) block at a time, in shared memory.
//
// Written for correctness first, on the tiles of ops/cuda/attention.cu
// (shared through ops/cuda/attention_tiles.cuh): a
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
#include <cmath>
#include <string>

#include "ops/cuda/attention_tiles.cuh"
#include "ops/mixture_attention.h"
#include "ops/mixture_attention_formulas.h"
#include "ops/through_float32.h"

namespace ks::cuda {
namespace {

using namespace mixture_attention_formulas;
using namespace attention_tiles;  // the tile geometry and its helpers

using Dims = TileDims;

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
  const auto [pair, i0, rows, pad_b] = query_tile(d, pad);
  const int tid = threadIdx.x, lane = tid % kWarp;
  const T scale = T(prm.scale);

  for (int64_t r = 0; r < M; ++r) tot[tid * M + r] = 0;
  load_rows(Qs, P, Q + (pair * d.T + i0) * P, rows, P);
  start_rows(Os, ms, ls, BR, E);
  const int64_t jend = key_end(prm, i0 + rows, d.S);
  for (int64_t j0 = 0; j0 < jend; j0 += kBC) {
    const int cols = int(min(int64_t(kBC), jend - j0));
    __syncthreads();  // the previous tile is no longer read
    load_keys(Ks, bs, K, bias, pair, j0, cols, d);
    load_rows(Vs, E, V + (pair * d.S + j0) * E, cols, E);
    __syncthreads();
    for (const int r : warp_rows(d.rw, rows)) {
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
      online_update(Os + r * E, Ws + r * kBC, Vs, cols, E, alpha, m_new, sum, ms + r, ls + r);
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
  for (int64_t x : grid_stride(pairs * M)) {
    const int64_t pair = x / M, r = x % M;
    double s = 0;
    for (int64_t t = 0; t < tiles; ++t) s += partial[(pair * tiles + t) * M + r];
    totals[x] = T(s);
  }
}

// --- backward ---
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
  const auto [pair, j0, cols, pad_b] = key_tile(d, pad);
  const int tid = threadIdx.x;
  const T scale = T(prm.scale);

  load_keys(Ks, bs, K, bias, pair, j0, cols, d);
  load_rows(Vs, VP, V + (pair * d.S + j0) * E, cols, E);
  fill(dKs, M * kBC * P, T(0));
  fill(dVs, kBC * E, T(0));
  fill(dbs, M * kBC, T(0));
  for (int64_t i0 = first_query(prm, j0, d.T) / BR * BR; i0 < d.T; i0 += BR) {
    const int rows = int(min(int64_t(BR), d.T - i0));
    __syncthreads();  // the previous query tile is no longer read
    load_rows(Qs, P, Q + (pair * d.T + i0) * P, rows, P);
    load_rows(Gs, E, G + (pair * d.T + i0) * E, rows, E);
    __syncthreads();
    for (const int r : warp_rows(d.rw, rows)) {
      const int64_t i = i0 + r;
      key_backward(Xs + r * M * kBC, Ws + r * kBC + tid % kWarp, Qs + r * P, Gs + r * E, Ks, bs, Vs, VP, cols, pair, i,
                   j0, L[pair * d.T + i], D[pair * d.T + i], pad_b, d, prm, hard);
    }
    __syncthreads();
    // dV_c += Σ_r W_rc dO_r;  dK_{m,c} += scale · Σ_r dx_{r,m,c} Q_r;  db_{m,c} += Σ_r dx_{r,m,c}  (r in order)
    accumulate_dv(dVs, Ws, Gs, rows, cols, E);
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
  store(dV + (pair * d.S + j0) * E, dVs, cols * E);
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
  const auto [pair, i0, rows, pad_b] = query_tile(d, pad);
  const int tid = threadIdx.x;
  const T scale = T(prm.scale);

  load_rows(Qs, P, Q + (pair * d.T + i0) * P, rows, P);
  load_rows(Gs, E, G + (pair * d.T + i0) * E, rows, E);
  fill(dQs, BR * P, T(0));
  const int64_t jend = key_end(prm, i0 + rows, d.S);
  for (int64_t j0 = 0; j0 < jend; j0 += kBC) {
    const int cols = int(min(int64_t(kBC), jend - j0));
    __syncthreads();  // the previous key tile is no longer read
    load_keys(Ks, bs, K, bias, pair, j0, cols, d);
    load_rows(Vs, VP, V + (pair * d.S + j0) * E, cols, E);
    __syncthreads();
    for (const int r : warp_rows(d.rw, rows)) {
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
  store(dQ + (pair * d.T + i0) * P, dQs, rows * P);
}

// --- launches ---
std::string head_sizes(const Dims& d) {
  return "M = " + std::to_string(d.M) + " keys of head size p = " + std::to_string(d.P) +
         " and e = " + std::to_string(d.E);
}

Dims dims_of(const Tensor& q, const Tensor& k, const Tensor& v) {
  return Dims{q.size(1), q.size(2), k.size(3), k.size(2), q.size(3), v.size(3), 0, 0};
}

void mixture_attention_forward_cuda(const Tensor& out, const Tensor& lse, const Tensor& totals, const Tensor& q_in,
                                    const Tensor& k_in, const Tensor& bias_in, const Tensor& v_in, const Tensor& pad_in,
                                    const SdpaParams& prm, bool hard) {
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
    const Launch l = plan(mgk_forward<T>, forward_shared, d, false, pairs, sizeof(T), dev.index, op, head_sizes(d));
    Tensor partial = totals.defined() ? Tensor::empty({pairs * d.tiles * d.M}, kFloat64, dev) : Tensor();
    mgk_forward<T><<<l.grid, kBlock, l.bytes, s>>>(
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
                                     const Tensor& v_in, const Tensor& out_in, const Tensor& lse, const Tensor& pad_in,
                                     const SdpaParams& prm, bool hard) {
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
    row_dot<T>
        <<<grid_for(rows, kThreads, dev.index), kThreads, 0, s>>>(D.data<T>(), g.data<T>(), out.data<T>(), rows, d.E);
    KS_CUDA_LAUNCH_CHECK();
    if (d.S > 0) {
      Dims dkv = d;
      const Launch l = plan(mgk_backward_kv<T>, kv_shared, dkv, true, pairs, sizeof(T), dev.index, op, head_sizes(d));
      mgk_backward_kv<T><<<l.grid, kBlock, l.bytes, s>>>(dk.data<T>(), dbias.data<T>(), dv.data<T>(), q.data<T>(),
                                                         k.data<T>(), bias.data<T>(), v.data<T>(), g.data<T>(),
                                                         lse.data<T>(), D.data<T>(), padp, dkv, prm, hard);
      KS_CUDA_LAUNCH_CHECK();
    }
    Dims dq_d = d;
    const Launch l = plan(mgk_backward_q<T>, q_shared, dq_d, false, pairs, sizeof(T), dev.index, op, head_sizes(d));
    mgk_backward_q<T><<<l.grid, kBlock, l.bytes, s>>>(dq.data<T>(), q.data<T>(), k.data<T>(), bias.data<T>(),
                                                      v.data<T>(), g.data<T>(), lse.data<T>(), D.data<T>(), padp, dq_d,
                                                      prm, hard);
    KS_CUDA_LAUNCH_CHECK();
  });
}

}  // namespace
KS_REGISTER_KERNEL(mixture_attention_forward_kernel, CUDA,
                   through_float32::mixture_attention_forward<mixture_attention_forward_cuda>);
KS_REGISTER_KERNEL(mixture_attention_backward_kernel, CUDA,
                   through_float32::mixture_attention_backward<mixture_attention_backward_cuda>);
}  // namespace ks::cuda
