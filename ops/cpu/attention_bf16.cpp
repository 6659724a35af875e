// ops/cpu/attention_bf16.cpp — float32 attention with bf16 tile products on a
// packed path (ops/cpu/attention_bf16.h): the loops of ops/cpu/attention.cpp,
// whose header comment gives the algorithm, with the operands packed once.
//
// Why: the generic kernel hands each tile product to cpu::gemm, which rounds
// and packs both operands on every call — each key tile once per query tile,
// the transposed kind for kᵀ. At head size 64 that packing, not the AMX
// products, was most of the attention's time. Here one task is one (b, key/
// value head) and the group of query heads that reads it (grouped-query
// attention; one query head without groups):
//   forward   Kᵀ and V as B, packed once per task; per query head Q as A;
//             each tile's probabilities rounded straight into a packed A;
//   backward  Kᵀ, Vᵀ and K as B, packed once per task; per query head Q and
//             dO as A, Q and dO as B; per tile P, dS and their transposes
//             rounded into packed A. dK and dV sum over the group in order.
// The rounding is the generic kernel's (every GEMM operand to bf16, nearest
// even), so the two differ only in float32 summation order; dQ and dK are
// summed unscaled and multiplied by the softmax scale once at the end. ALiBi
// adds −m·|i − j| to each scaled score row (add_alibi_row).
// Scratch: per task the packed operands of one (b, key/value head) and one
// query head at a time, (T + S)·(p + e) bf16 values for the forward, about
// twice that for the backward.
// Not here: float64, the Float32 precision, and bf16 on a CPU without a bf16
// kernel (the float32 path), which computes in float32 with the float32
// kernels of ops/cpu/attention.cpp (core/matmul_precision.h).
#include "ops/cpu/attention_bf16.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/cpu_features.h"
#include "core/matmul_precision.h"
#include "core/parallel.h"
#include "ops/attention_formulas.h"
#include "ops/cpu/attention_tiles.h"
#include "ops/cpu/avx512_clone.h"
#include "ops/cpu/gemm/gemm.h"
#include "ops/vec_math.h"

namespace ks::cpu {
namespace {

using namespace attention_formulas;  // visible_prefix, key_end, weight_index, kv_pair, alibi_slope
using bf16::pack_a;
using bf16::pack_b;
using bf16::packed_a_ld;
using bf16::packed_product;
using bf16::PackedA;
using bf16::PackedB;
using bf16::padded;

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
// Tiles as in ops/cpu/attention.cpp: query rows, keys forward, keys backward.
constexpr int64_t kBr = 64;
constexpr int64_t kBc = 256;
constexpr int64_t kBcBack = 64;

// A float32 matrix (rows, cols), leading dimension ld, and its transpose, as GEMM operands.
GemmMatrix<float> rows_of(const float* x, int64_t ld) { return {.data = x, .ld = ld}; }
GemmMatrix<float> transpose_of(const float* x, int64_t ld) { return {.data = x, .ld = ld, .transposed = true}; }

struct Geometry {
  int64_t B, H, T, S, P, E;
  int64_t G;  // key/value heads; each serves H / G query heads
  int64_t group() const { return H / G; }
  int64_t tp() const { return padded(T); }
  int64_t sp() const { return padded(S); }
  int64_t pp() const { return padded(P); }
  int64_t ep() const { return padded(E); }
};

template <class V> void grow(V& v, int64_t n) {
  if (int64_t(v.size()) < n) v.resize(size_t(n));
}

}  // namespace

bool sdpa_bf16_applies(const Tensor& q, const Tensor& k) {
  return cpu_matmul_precision() == MatmulPrecision::BFloat16 &&
         q.size(2) * (q.size(1) / k.size(1)) >= kPackedMinQueryRows;
}

void sdpa_forward_bf16(const Tensor& out, const Tensor& lse, const Tensor& q_in, const Tensor& k_in, const Tensor& v_in,
                       const Tensor& pad_in, const SdpaParams& prm) {
  const Mat<float> Q(q_in), K(k_in), V(v_in);
  const Tensor pad = pad_in.defined() ? contiguous_raw(pad_in) : Tensor();
  const Geometry d{q_in.size(0), q_in.size(1), q_in.size(2), k_in.size(2), q_in.size(3), v_in.size(3), k_in.size(1)};
  const bool* PAD = pad.defined() ? pad.data<bool>() : nullptr;
  float *O = out.data<float>(), *L = lse.data<float>();
  const CpuGemmPath path = cpu_gemm_path();
  const float scale = float(prm.scale);
  const int64_t lq = packed_a_ld(d.P), lp = packed_a_ld(kBc);  // a tile's probabilities: at most kBc keys
  const int64_t group = d.group();
  parallel_for(
      0, d.B * d.G, attention_grain(group * d.T * d.S * (d.P + d.E)), [&](int64_t p0, int64_t p1) KS_AVX512_CLONE {
        // packed: Q (T, p) as A | Kᵀ (p, S) as B | V (S, e) as B | one tile's
        // probabilities (kBr, kBc) as A | V's last partial chunk of 32 keys as B
        thread_local std::vector<uint16_t> qa, kt, vb, pa, vtail;
        grow(qa, d.tp() * lq);
        grow(kt, d.pp() * d.sp());
        grow(vb, d.sp() * d.ep());
        grow(pa, kBr * lp);
        grow(vtail, bf16::kPad * d.ep());
        std::vector<float> sbuf(size_t(kBr * kBc)), fbuf(prm.dropout ? size_t(kBc) : 0), acc(size_t(kBr * d.E));
        std::vector<float> m(static_cast<size_t>(kBr)), l(static_cast<size_t>(kBr));
        for (int64_t kvp = p0; kvp < p1; ++kvp) {
          const PackedB kt_b = pack_b(transpose_of(K.at(kvp, 0), K.ld), d.P, d.S, kt.data());
          const PackedB v_b = pack_b(rows_of(V.at(kvp, 0), V.ld), d.S, d.E, vb.data());
          for (int64_t pair = kvp * group; pair < (kvp + 1) * group; ++pair) {  // the query heads reading kvp
            const bool* pad_b = PAD ? PAD + (pair / d.H) * d.S : nullptr;
            const float slope = prm.alibi ? float(alibi_slope(pair % d.H, d.H)) : 0.f;
            const PackedA q_a = pack_a(rows_of(Q.at(pair, 0), Q.ld), d.T, d.P, qa.data());
            for (int64_t i0 = 0; i0 < d.T; i0 += kBr) {
              const int64_t rows = std::min(kBr, d.T - i0);
              std::fill(acc.begin(), acc.end(), 0.f);
              std::fill(m.begin(), m.end(), kNegInf);
              std::fill(l.begin(), l.end(), 0.f);
              const int64_t jend = key_end(prm, i0 + rows, d.S);
              // A sliding window: the key tiles before the first key row i0 sees are skipped.
              for (int64_t j0 = window_start(prm, i0) / kBc * kBc; j0 < jend; j0 += kBc) {
                const int64_t cols = std::min(kBc, jend - j0);
                float* s = sbuf.data();
                // q kᵀ, (rows, cols)
                packed_product({.path = path,
                                .a = q_a.at(i0, 0),
                                .b = kt_b.at(0, j0),
                                .m = rows,
                                .n = cols,
                                .k = d.pp(),
                                .c = s,
                                .ldc = cols});
                for (int64_t r = 0; r < rows; ++r) {
                  float* sr = s + r * cols;
                  for (int64_t c = 0; c < cols; ++c) sr[c] *= scale;
                  forward_score_row(sr, cols, prm, slope, pair, i0 + r, j0, d.T, d.S, pad_b, m[size_t(r)], l[size_t(r)],
                                    acc.data() + r * d.E, d.E, fbuf.data());
                }
                const PackedA p_a = pack_a(rows_of(s, cols), rows, cols, pa.data());
                // acc += p v. Keys past `cols` in V's packed chunk of 32 are real
                // keys this tile must not touch (0·inf would be NaN): a partial last
                // chunk multiplies a zero-padded copy of its keys instead.
                const int64_t whole = cols / bf16::kPad * bf16::kPad;
                if (whole > 0)
                  packed_product({.path = path,
                                  .a = p_a,
                                  .b = v_b.at(j0, 0),
                                  .m = rows,
                                  .n = d.E,
                                  .k = whole,
                                  .c = acc.data(),
                                  .ldc = d.E,
                                  .accumulate = true});
                if (whole < cols) {
                  const PackedB tail = pack_b(rows_of(V.at(kvp, j0 + whole), V.ld), cols - whole, d.E, vtail.data());
                  packed_product({.path = path,
                                  .a = p_a.at(0, whole),
                                  .b = tail,
                                  .m = rows,
                                  .n = d.E,
                                  .k = tail.kp,
                                  .c = acc.data(),
                                  .ldc = d.E,
                                  .accumulate = true});
                }
              }
              finish_rows(O + (pair * d.T + i0) * d.E, L + pair * d.T + i0, acc.data(), m.data(), l.data(), rows, d.E);
            }
          }
        }
      });
}

void sdpa_backward_bf16(const Tensor& dq, const Tensor& dk, const Tensor& dv, const Tensor& g_in, const Tensor& q_in,
                        const Tensor& k_in, const Tensor& v_in, const Tensor& out, const Tensor& lse,
                        const Tensor& pad_in, const SdpaParams& prm) {
  const Mat<float> Q(q_in), K(k_in), V(v_in), G(g_in);
  const Tensor pad = pad_in.defined() ? contiguous_raw(pad_in) : Tensor();
  const Geometry d{q_in.size(0), q_in.size(1), q_in.size(2), k_in.size(2), q_in.size(3), v_in.size(3), k_in.size(1)};
  const float* O = out.data<float>();
  const float* L = lse.data<float>();
  const bool* PAD = pad.defined() ? pad.data<bool>() : nullptr;
  float *dQ = dq.data<float>(), *dK = dk.data<float>(), *dV = dv.data<float>();
  const CpuGemmPath path = cpu_gemm_path();
  const float scale = float(prm.scale);
  // row strides of the packed A operands: Q, dO, and per tile Wᵀ and dSᵀ (k <= kBr), dS (k <= kBcBack)
  const int64_t lq = packed_a_ld(d.P), lg = packed_a_ld(d.E), lr = packed_a_ld(kBr), lc = packed_a_ld(kBcBack);
  const int64_t tp = d.tp(), sp = d.sp(), pp = d.pp(), ep = d.ep();
  const int64_t group = d.group();
  // one task: the (b, key/value head) pairs [p0, p1) and the query heads reading them
  auto pairs = [&](int64_t p0, int64_t p1) KS_AVX512_CLONE {
    // packed, once per (b, key/value head): Kᵀ, Vᵀ, K as B; per query head: Q and dO as A, Q and dO as B;
    // per tile: Wᵀ, dS, dSᵀ as A
    thread_local std::vector<uint16_t> qa, ga, kt, vt, kb, qb, gb, wt, dsa, dst;
    grow(qa, tp * lq);
    grow(ga, tp * lg);
    grow(kt, pp * sp);
    grow(vt, ep * sp);
    grow(kb, sp * pp);
    grow(qb, tp * pp);
    grow(gb, tp * ep);
    grow(wt, kBcBack * lr);
    grow(dsa, kBr * lc);
    grow(dst, kBcBack * lr);
    // P | dP | W (dropout: the factors, then P ∘ factors) | D (T)
    std::vector<float> buf(size_t(3 * kBr * kBcBack + d.T));
    float *P = buf.data(), *dP = P + kBr * kBcBack, *W = dP + kBr * kBcBack, *D = W + kBr * kBcBack;
    for (int64_t kvp = p0; kvp < p1; ++kvp) {
      float *dKp = dK + kvp * d.S * d.P, *dVp = dV + kvp * d.S * d.E;
      const PackedB kt_b = pack_b(transpose_of(K.at(kvp, 0), K.ld), d.P, d.S, kt.data());
      const PackedB vt_b = pack_b(transpose_of(V.at(kvp, 0), V.ld), d.E, d.S, vt.data());
      const PackedB k_b = pack_b(rows_of(K.at(kvp, 0), K.ld), d.S, d.P, kb.data());
      std::fill(dKp, dKp + d.S * d.P, 0.f);
      std::fill(dVp, dVp + d.S * d.E, 0.f);
      for (int64_t pair = kvp * group; pair < (kvp + 1) * group; ++pair) {  // the query heads reading kvp
        const float *Op = O + pair * d.T * d.E, *Lp = L + pair * d.T;
        float* dQp = dQ + pair * d.T * d.P;
        const bool* pad_b = PAD ? PAD + (pair / d.H) * d.S : nullptr;
        const float slope = prm.alibi ? float(alibi_slope(pair % d.H, d.H)) : 0.f;
        row_dots(D, G.at(pair, 0), G.ld, Op, d.T, d.E);
        const PackedA q_a = pack_a(rows_of(Q.at(pair, 0), Q.ld), d.T, d.P, qa.data());
        const PackedA g_a = pack_a(rows_of(G.at(pair, 0), G.ld), d.T, d.E, ga.data());
        const PackedB q_b = pack_b(rows_of(Q.at(pair, 0), Q.ld), d.T, d.P, qb.data());
        const PackedB g_b = pack_b(rows_of(G.at(pair, 0), G.ld), d.T, d.E, gb.data());
        std::fill(dQp, dQp + d.T * d.P, 0.f);
        for (int64_t j0 = 0; j0 < d.S; j0 += kBcBack) {
          const int64_t cols = std::min(kBcBack, d.S - j0), cols_p = padded(cols);
          float *dKj = dKp + j0 * d.P, *dVj = dVp + j0 * d.E;
          const int64_t last_row = window_query_end(prm, j0 + cols - 1, d.T);  // a sliding window's last reader
          for (int64_t i0 = first_query(prm, j0, d.T) / kBr * kBr; i0 < last_row; i0 += kBr) {
            const int64_t rows = std::min(kBr, d.T - i0), rows_p = padded(rows);
            // scores, unscaled
            packed_product({.path = path,
                            .a = q_a.at(i0, 0),
                            .b = kt_b.at(0, j0),
                            .m = rows,
                            .n = cols,
                            .k = pp,
                            .c = P,
                            .ldc = cols});
            for (int64_t r = 0; r < rows; ++r) {
              float* pr = P + r * cols;
              const float lse_r = Lp[i0 + r];
              for (int64_t c = 0; c < cols; ++c) pr[c] *= scale;
              if (prm.alibi) add_alibi_row(pr, cols, slope, prm.causal_offset + i0 + r, j0);
              probability_row(pr, cols, lse_r == kNegInf ? 0 : visible_prefix(prm, i0 + r, j0, cols),
                              pad_b ? pad_b + j0 : nullptr, lse_r, window_hidden(prm, i0 + r, j0, cols));
              if (prm.dropout) dropout_factors(W + r * cols, cols, weight_index(pair, d.T, d.S, i0 + r, j0), prm);
            }
            // dO vᵀ
            packed_product({.path = path,
                            .a = g_a.at(i0, 0),
                            .b = vt_b.at(0, j0),
                            .m = rows,
                            .n = cols,
                            .k = ep,
                            .c = dP,
                            .ldc = cols});
            if (prm.dropout)
              for (int64_t x = 0; x < rows * cols; ++x) {
                dP[x] *= W[x];
                W[x] *= P[x];
              }
            // dV += Wᵀ dO
            packed_product({.path = path,
                            .a = pack_a(transpose_of(prm.dropout ? W : P, cols), cols, rows, wt.data()),
                            .b = g_b.at(i0, 0),
                            .m = cols,
                            .n = d.E,
                            .k = rows_p,
                            .c = dVj,
                            .ldc = d.E,
                            .accumulate = true});
            score_gradient(dP, P, D + i0, rows, cols);
            // dQ += dS k (scaled below)
            packed_product({.path = path,
                            .a = pack_a(rows_of(dP, cols), rows, cols, dsa.data()),
                            .b = k_b.at(j0, 0),
                            .m = rows,
                            .n = d.P,
                            .k = cols_p,
                            .c = dQp + i0 * d.P,
                            .ldc = d.P,
                            .accumulate = true});
            // dK += dSᵀ q (scaled below)
            packed_product({.path = path,
                            .a = pack_a(transpose_of(dP, cols), cols, rows, dst.data()),
                            .b = q_b.at(i0, 0),
                            .m = cols,
                            .n = d.P,
                            .k = rows_p,
                            .c = dKj,
                            .ldc = d.P,
                            .accumulate = true});
          }
        }
        for (int64_t x = 0; x < d.T * d.P; ++x) dQp[x] *= scale;
      }
      for (int64_t x = 0; x < d.S * d.P; ++x) dKp[x] *= scale;
    }
  };
  parallel_for(0, d.B * d.G, attention_grain(group * d.T * d.S * (2 * d.P + 3 * d.E)), pairs);
}

}  // namespace ks::cpu
