// ops/cpu/attention.cpp — CPU kernels of scaled_dot_product_attention: tiled,
// FlashAttention-2 style, never holding more than a (query tile, key tile)
// block of scores (see ops/attention.h for the math).
//
// Grouped-query attention: k and v have g heads, query head n reads head
// n / (h / g) (attention_formulas::kv_pair) where it lies. ALiBi: each score
// row gets its −m·|i − j| (add_alibi_row) before the mask and the softmax.
// Forward: one task per (b, h, query tile of kBr rows). The task walks the
// key tiles (kBc keys) that any of its rows can see (a causal mask ends the
// walk early): scores = q kᵀ·scale by one GEMM, masked entries set to -inf,
// then per row the online softmax with the true running max m (from -inf)
// and sum l: p = exp(s − m_new), o ← o·exp(m − m_new) + p v (the second
// GEMM). Dropout multiplies p by mask/(1−p) after p has entered l, as the
// composed softmax → dropout does. At the end out = o / l and lse = m + log l
// (a row that saw no key: out = 0, lse = -inf).
// Backward: one task per (b, key/value head), walking its group of query
// heads in order, so that dK and dV sum over the group with no race and in
// a fixed order. Per query head: D_i = dO_i · O_i for every row, then for
// each key tile, each query tile that can see it: P = exp(s − lse) (0 where
// masked), W = P ∘ mask/(1−p), dV_j += Wᵀ dO_i, dP = (dO_i V_jᵀ) ∘ mask/(1−p),
// dS = P ∘ (dP − D), dQ_i += dS K_j·scale, dK_j += dSᵀ Q_i·scale: five GEMMs
// (the scores recomputed, dO Vᵀ, dV, dQ, dK).
// Scratch per task: forward one (kBr, kBc) block and the (kBr, e) output
// accumulator; backward three (kBr, kBcBack) blocks and T values of D.
//
// GEMMs go through the door single-threaded (ops/cpu/attention_products.h on
// ops/cpu/gemm/gemm.h): the tasks are the parallelism. float32 inputs compute in float32 (BLAS and the
// running sums), float64 in float64; under MatmulPrecision::BFloat16 the
// float32 tile products are bf16 GEMMs, the softmax float32: on a packed bf16
// path (AMX, AVX512-BF16) by ops/cpu/attention_bf16.cpp, which packs each
// (b, h)'s operands once, else here through cpu::gemm. Inputs are read where
// they lie when BLAS can (unit column stride; see Mat), else copied
// contiguous once. bf16 and fp16 inputs (a model held in 16 bits) are
// widened a tile at a time as the forward reads them (forward_typed's S),
// with the bits of widening them whole; their backward widens them whole
// (through_float32.h).
// The dropout mask is drawn element by element from Philox exactly as
// ops/cpu/dropout.cpp draws it for the (B, h, T, S) weights.
#include <immintrin.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "core/copy.h"
#include "core/parallel.h"
#include "ops/attention.h"
#include "ops/attention_formulas.h"
#include "ops/cpu/attention_bf16.h"
#include "ops/cpu/attention_products.h"
#include "ops/cpu/attention_tiles.h"
#include "ops/cpu/row_math.h"
#include "ops/through_float32.h"
#include "ops/vec_math.h"

namespace ks::cpu {
namespace {

using namespace attention_formulas;  // visible_prefix, key_end, weight_index, kv_pair, alibi_slope

// Query rows per tile and keys per tile. A (64, 256) float block is 64 KiB:
// the three blocks of a task stay in L2, and one key tile covers a whole
// 256-long sequence, so the common case rescales nothing.
constexpr int64_t kBr = 64;
constexpr int64_t kBc = 256;
// Backward: key tiles of 64, so that a causal mask skips more (key tile, query
// tile) blocks (10 of 16 are visited at T = S = 256, against 6 of 8 with 128);
// measured ~5% faster than 128 on the bench shapes.
constexpr int64_t kBcBack = 64;

struct Geometry {
  int64_t B, H, T, S, P, E;
  int64_t G;  // key/value heads; each serves H / G query heads
  int64_t group() const { return H / G; }
};

// Rows of 16-bit values widened to float32 (exactly): `rows` rows of `cols`
// values ld apart in src into dst, rows cols apart.
template <class S> void widen_rows(float* dst, const S* src, int64_t rows, int64_t cols, int64_t ld) {
  for (int64_t r = 0; r < rows; ++r) {
    const S* in = src + r * ld;
    float* out = dst + r * cols;
    if constexpr (std::is_same_v<S, BFloat16>) {
      for (int64_t c = 0; c < cols; ++c) out[c] = std::bit_cast<float>(uint32_t(in[c].bits) << 16);
    } else {
      int64_t c = 0;
      for (; c + 8 <= cols; c += 8)
        _mm256_storeu_ps(out + c, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + c))));
      for (; c < cols; ++c) out[c] = _cvtsh_ss(in[c].bits);
    }
  }
}

// T: the arithmetic's type; S: q's, k's, v's and out's, T or (for a 16-bit
// model, T float) bf16 or fp16. A 16-bit operand is widened a tile at a time
// into the task's own float32 buffers (a query tile, each key and value
// tile), laid out as a contiguous float32 copy of the whole tensor would be,
// so the products are the same as through_float32's copies of the whole
// tensors, bit for bit, without writing and reading those copies: in a
// decoding step that was the whole KV cache, widened at every layer.
template <class T, class S = T>
void forward_typed(const Tensor& out, const Tensor& lse, const Tensor& q_in, const Tensor& k_in, const Tensor& v_in,
                   const Tensor& pad_in, const SdpaParams& prm) {
  constexpr bool widen = !std::is_same_v<S, T>;
  const Mat<S> Q(q_in), K(k_in), V(v_in);
  const Tensor pad = pad_in.defined() ? contiguous_raw(pad_in) : Tensor();
  const Geometry d{q_in.size(0), q_in.size(1), q_in.size(2), k_in.size(2), q_in.size(3), v_in.size(3), k_in.size(1)};
  const bool* PAD = pad.defined() ? pad.data<bool>() : nullptr;
  S* O = out.data<S>();
  T* L = lse.data<T>();
  const int64_t tiles = (d.T + kBr - 1) / kBr;
  const T scale = T(prm.scale);
  constexpr T kNegInf = -std::numeric_limits<T>::infinity();
  const int64_t task_work = std::min(kBr, d.T) * d.S * (d.P + d.E);  // multiply-adds, at most
  parallel_for(0, d.B * d.H * tiles, attention_grain(task_work), [&](int64_t t0, int64_t t1) {
    const int64_t tile_rows = std::min(kBr, d.T);  // 1 in a decoding step: no (kBr, kBc) block to clear
    std::vector<T> sbuf(size_t(tile_rows * kBc)), fbuf(prm.dropout ? size_t(kBc) : 0), acc(size_t(tile_rows * d.E));
    std::vector<T> m(static_cast<size_t>(tile_rows)), l(static_cast<size_t>(tile_rows));
    // The widened tiles (16-bit operands only): query rows, keys, values, the output rows before rounding.
    std::vector<T> qw(widen ? size_t(tile_rows * d.P) : 0), kw(widen ? size_t(kBc * d.P) : 0),
        vw(widen ? size_t(kBc * d.E) : 0), ow(widen ? size_t(tile_rows * d.E) : 0);
    for (int64_t task = t0; task < t1; ++task) {
      const int64_t pair = task / tiles, i0 = (task % tiles) * kBr, rows = std::min(kBr, d.T - i0);
      const int64_t b = pair / d.H, kvp = kv_pair(pair, d.group());
      const T* Qi;
      int64_t q_ld;
      if constexpr (widen) {
        widen_rows(qw.data(), Q.at(pair, i0), rows, d.P, Q.ld);
        Qi = qw.data(), q_ld = d.P;
      } else {
        Qi = Q.at(pair, i0), q_ld = Q.ld;
      }
      const bool* pad_b = PAD ? PAD + b * d.S : nullptr;
      const T slope = prm.alibi ? T(alibi_slope(pair % d.H, d.H)) : T(0);
      std::fill(acc.begin(), acc.end(), T(0));
      std::fill(m.begin(), m.end(), kNegInf);
      std::fill(l.begin(), l.end(), T(0));
      const int64_t jend = key_end(prm, i0 + rows, d.S);
      // A sliding window: the key tiles before the first key row i0 sees are skipped.
      for (int64_t j0 = window_start(prm, i0) / kBc * kBc; j0 < jend; j0 += kBc) {
        const int64_t cols = std::min(kBc, jend - j0);
        const T *Kj, *Vj;
        int64_t k_ld, v_ld;
        if constexpr (widen) {
          widen_rows(kw.data(), K.at(kvp, j0), cols, d.P, K.ld);
          widen_rows(vw.data(), V.at(kvp, j0), cols, d.E, V.ld);
          Kj = kw.data(), k_ld = d.P, Vj = vw.data(), v_ld = d.E;
        } else {
          Kj = K.at(kvp, j0), k_ld = K.ld, Vj = V.at(kvp, j0), v_ld = V.ld;
        }
        T* s = sbuf.data();
        score_tile(s, rows, cols, d.P, scale, Qi, q_ld, Kj, k_ld);  // (rows, cols)
        for (int64_t r = 0; r < rows; ++r)
          forward_score_row(s + r * cols, cols, prm, slope, pair, i0 + r, j0, d.T, d.S, pad_b, m[size_t(r)],
                            l[size_t(r)], acc.data() + r * d.E, d.E, fbuf.data());
        if (d.T == 1)  // a decoding step
          add_weighted_values_row(acc.data(), d.E, cols, s, Vj, v_ld);
        else
          add_weighted_values(acc.data(), rows, d.E, cols, s, Vj, v_ld);  // acc += p v
      }
      S* Oi = O + (pair * d.T + i0) * d.E;
      if constexpr (widen) {  // rounded once, as through_float32's store of the float32 output
        finish_rows(ow.data(), L + pair * d.T + i0, acc.data(), m.data(), l.data(), rows, d.E);
        for (int64_t x = 0; x < rows * d.E; ++x) Oi[x] = S(ow[size_t(x)]);
      } else {
        finish_rows(Oi, L + pair * d.T + i0, acc.data(), m.data(), l.data(), rows, d.E);
      }
    }
  });
}

template <class T>
void backward_typed(const Tensor& dq, const Tensor& dk, const Tensor& dv, const Tensor& g_in, const Tensor& q_in,
                    const Tensor& k_in, const Tensor& v_in, const Tensor& out, const Tensor& lse, const Tensor& pad_in,
                    const SdpaParams& prm) {
  const Mat<T> Q(q_in), K(k_in), V(v_in), G(g_in);
  const Tensor pad = pad_in.defined() ? contiguous_raw(pad_in) : Tensor();
  const Geometry d{q_in.size(0), q_in.size(1), q_in.size(2), k_in.size(2), q_in.size(3), v_in.size(3), k_in.size(1)};
  const T* O = out.data<T>();
  const T* L = lse.data<T>();
  const bool* PAD = pad.defined() ? pad.data<bool>() : nullptr;
  T *dQ = dq.data<T>(), *dK = dk.data<T>(), *dV = dv.data<T>();
  const T scale = T(prm.scale);
  constexpr T kNegInf = -std::numeric_limits<T>::infinity();
  const int64_t group = d.group();
  parallel_for(0, d.B * d.G, attention_grain(group * d.T * d.S * (2 * d.P + 3 * d.E)), [&](int64_t p0, int64_t p1) {
    // P | dP | W (dropout: the factors, then P ∘ factors) | D (T)
    std::vector<T> buf(size_t(3 * kBr * kBcBack + d.T));
    T *P = buf.data(), *dP = P + kBr * kBcBack, *W = dP + kBr * kBcBack, *D = W + kBr * kBcBack;
    for (int64_t kvp = p0; kvp < p1; ++kvp) {
      T *dKp = dK + kvp * d.S * d.P, *dVp = dV + kvp * d.S * d.E;
      std::fill(dKp, dKp + d.S * d.P, T(0));
      std::fill(dVp, dVp + d.S * d.E, T(0));
      for (int64_t pair = kvp * group; pair < (kvp + 1) * group; ++pair) {  // the query heads reading kvp
        const int64_t b = pair / d.H;
        const T *Op = O + pair * d.T * d.E, *Lp = L + pair * d.T;
        T* dQp = dQ + pair * d.T * d.P;
        const bool* pad_b = PAD ? PAD + b * d.S : nullptr;
        const T slope = prm.alibi ? T(alibi_slope(pair % d.H, d.H)) : T(0);
        row_dots(D, G.at(pair, 0), G.ld, Op, d.T, d.E);
        std::fill(dQp, dQp + d.T * d.P, T(0));
        for (int64_t j0 = 0; j0 < d.S; j0 += kBcBack) {
          const int64_t cols = std::min(kBcBack, d.S - j0);
          const T *Kj = K.at(kvp, j0), *Vj = V.at(kvp, j0);
          T *dKj = dKp + j0 * d.P, *dVj = dVp + j0 * d.E;
          // Under the causal rule, query i sees key j0 only from i = j0 − offset on.
          const int64_t first_row = prm.causal ? std::clamp<int64_t>(j0 - prm.causal_offset, 0, d.T) : 0;
          // ... and, under a sliding window, only up to the last query whose window holds j0 + cols − 1.
          const int64_t last_row = window_query_end(prm, j0 + cols - 1, d.T);
          for (int64_t i0 = first_row / kBr * kBr; i0 < last_row; i0 += kBr) {
            const int64_t rows = std::min(kBr, d.T - i0);
            const T *Qi = Q.at(pair, i0), *Gi = G.at(pair, i0);
            score_tile(P, rows, cols, d.P, scale, Qi, Q.ld, Kj, K.ld);
            for (int64_t r = 0; r < rows; ++r) {
              T* pr = P + r * cols;
              const T lr = Lp[i0 + r];
              if (prm.alibi) add_alibi_row(pr, cols, slope, prm.causal_offset + i0 + r, j0);
              probability_row(pr, cols, lr == kNegInf ? 0 : visible_prefix(prm, i0 + r, j0, cols),
                              pad_b ? pad_b + j0 : nullptr, lr, window_hidden(prm, i0 + r, j0, cols));
              if (prm.dropout) dropout_factors(W + r * cols, cols, weight_index(pair, d.T, d.S, i0 + r, j0), prm);
            }
            weight_grad_tile(dP, rows, cols, d.E, Gi, G.ld, Vj, V.ld);  // dO Vᵀ
            if (prm.dropout)
              for (int64_t x = 0; x < rows * cols; ++x) {
                dP[x] *= W[x];
                W[x] *= P[x];
              }
            const T* Wd = prm.dropout ? W : P;
            add_value_grad(dVj, cols, d.E, rows, Wd, Gi, G.ld);  // dV += Wᵀ dO
            score_gradient(dP, P, D + i0, rows, cols);
            add_query_key_grads(dQp + i0 * d.P, dKj, rows, cols, d.P, scale, dP, Qi, Q.ld, Kj, K.ld);
          }
        }
      }
    }
  });
}

void sdpa_forward_cpu(const Tensor& out, const Tensor& lse, const Tensor& q, const Tensor& k, const Tensor& v,
                      const Tensor& key_padding, const SdpaParams& prm) {
  if (out.dtype() == DType::Float32 && sdpa_bf16_applies(q, k))
    return sdpa_forward_bf16(out, lse, q, k, v, key_padding, prm);
  dispatch_floating(out.dtype(), "scaled_dot_product_attention", [&](auto tag) {
    forward_typed<typename decltype(tag)::type>(out, lse, q, k, v, key_padding, prm);
  });
}

// The registered forward: 16-bit operands (a bf16 or fp16 model) run the
// float32 kernel on tiles widened as it goes (forward_typed's S); where the
// packed bf16 kernel runs (sdpa_bf16_applies) they are widened whole for it.
void sdpa_forward_any(const Tensor& out, const Tensor& lse, const Tensor& q, const Tensor& k, const Tensor& v,
                      const Tensor& key_padding, const SdpaParams& prm) {
  if (q.dtype() == DType::BFloat16 && !sdpa_bf16_applies(q, k))
    return forward_typed<float, BFloat16>(out, lse, q, k, v, key_padding, prm);
  if (q.dtype() == DType::Float16 && !sdpa_bf16_applies(q, k))
    return forward_typed<float, Float16>(out, lse, q, k, v, key_padding, prm);
  through_float32::sdpa_forward<sdpa_forward_cpu>(out, lse, q, k, v, key_padding, prm);
}

void sdpa_backward_cpu(const Tensor& dq, const Tensor& dk, const Tensor& dv, const Tensor& g, const Tensor& q,
                       const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse,
                       const Tensor& key_padding, const SdpaParams& prm) {
  // The forward's rule (attention_bf16.h), so that a forward and its backward compute alike.
  if (g.dtype() == DType::Float32 && sdpa_bf16_applies(q, k))
    return sdpa_backward_bf16(dq, dk, dv, g, q, k, v, out, lse, key_padding, prm);
  dispatch_floating(g.dtype(), "scaled_dot_product_attention backward", [&](auto tag) {
    backward_typed<typename decltype(tag)::type>(dq, dk, dv, g, q, k, v, out, lse, key_padding, prm);
  });
}

}  // namespace
KS_REGISTER_KERNEL(sdpa_forward_kernel, CPU, sdpa_forward_any);
KS_REGISTER_KERNEL(sdpa_backward_kernel, CPU, through_float32::sdpa_backward<sdpa_backward_cpu>);
}  // namespace ks::cpu
