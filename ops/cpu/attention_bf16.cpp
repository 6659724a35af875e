// ops/cpu/attention_bf16.cpp — float32 attention with bf16 tile products on a
// packed path (ops/cpu/attention_bf16.h): the loops of ops/cpu/attention.cpp,
// whose header comment gives the algorithm, with the operands packed once.
//
// Why: the generic kernel hands each tile product to cpu::gemm, which rounds
// and packs both operands on every call — each key tile once per query tile,
// the transposed kind for kᵀ. At head size 64 that packing, not the AMX
// products, was most of the attention's time. Here one task is one (b, h):
//   forward   Q as A, Kᵀ and V as B, packed once; each tile's probabilities
//             rounded straight into a packed A;
//   backward  Q and dO as A; Kᵀ, Vᵀ, K, Q and dO as B, packed once; per tile
//             P, dS and their transposes rounded into packed A.
// The rounding is the generic kernel's (every GEMM operand to bf16, nearest
// even), so the two differ only in float32 summation order; dQ and dK are
// summed unscaled and multiplied by the softmax scale once at the end.
// Scratch: per task the packed operands of one (b, h), (T + S)·(p + e)
// bf16 values for the forward, about twice that for the backward.
// Not here: float64, the Float32 precision, the float32 bf16 path.
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
#include "ops/cpu/gemm/packed.h"
#include "ops/cpu/vec_math.h"

namespace ks::cpu {
namespace {

using namespace attention_formulas;  // visible_prefix, key_end, weight_index
using bf16::kBlock;
using bf16::kPanel;
using bf16::pack_a;
using bf16::pack_b;
using bf16::packed_product;
using bf16::round_up;

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
// Tiles as in ops/cpu/attention.cpp: query rows, keys forward, keys backward.
constexpr int64_t kBr = 64;
constexpr int64_t kBc = 256;
constexpr int64_t kBcBack = 64;

// A packed A's row stride for k values: one cache line past the padded k, so
// that the 16 rows of a tile do not share a few L1 sets.
inline int64_t a_stride(int64_t k) { return round_up(k, bf16::kKStep) + 32; }

// A matrix of float32 rows (rows, cols), leading dimension ld, packed as a
// GEMM's A (transposed: as its transpose (cols, rows)) into `out`, with
// round_up(rows, 32) rows so that every block the products read is zero-padded.
void pack_rows(const float* x, int64_t ld, int64_t rows, int64_t cols, int64_t kp, uint16_t* out) {
  pack_a(x, false, ld, rows, cols, kp, 0, round_up(rows, kBlock), out);
}
void pack_rows_transposed(const float* x, int64_t ld, int64_t rows, int64_t cols, int64_t kp, uint16_t* out) {
  pack_a(x, true, ld, cols, rows, kp, 0, round_up(cols, kBlock), out);
}
// (k, n) rows of float32 (transposed: stored as (n, k)) packed as a GEMM's B
// with kp = round_up(k, 32); panel p at out + p·kp·16.
void pack_cols(const float* x, bool transposed, int64_t ld, int64_t k, int64_t n, uint16_t* out) {
  pack_b(x, transposed, ld, k, n, round_up(k, bf16::kKStep), 0, round_up(n, kBlock) / kPanel, out);
}

struct Geometry {
  int64_t B, H, T, S, P, E;
  int64_t tp() const { return round_up(T, kBlock); }
  int64_t sp() const { return round_up(S, kBlock); }
  int64_t pp() const { return round_up(P, kBlock); }
  int64_t ep() const { return round_up(E, kBlock); }
};

template <class V> void grow(V& v, int64_t n) {
  if (int64_t(v.size()) < n) v.resize(size_t(n));
}

}  // namespace

bool sdpa_bf16_applies() {
  return matmul_precision() == MatmulPrecision::BFloat16 && cpu_gemm_path() != CpuGemmPath::Float32;
}

void sdpa_forward_bf16(const Tensor& out, const Tensor& lse, const Tensor& q_in, const Tensor& k_in, const Tensor& v_in,
                       const Tensor& pad_in, const SdpaParams& prm) {
  const Mat<float> Q(q_in), K(k_in), V(v_in);
  const Tensor pad = pad_in.defined() ? contiguous_raw(pad_in) : Tensor();
  const Geometry d{q_in.size(0), q_in.size(1), q_in.size(2), k_in.size(2), q_in.size(3), v_in.size(3)};
  const bool* PAD = pad.defined() ? pad.data<bool>() : nullptr;
  float *O = out.data<float>(), *L = lse.data<float>();
  const CpuGemmPath path = cpu_gemm_path();
  const float scale = float(prm.scale);
  const int64_t lq = a_stride(d.P), lp = a_stride(kBc);
  parallel_for(0, d.B * d.H, attention_grain(d.T * d.S * (d.P + d.E)), [&](int64_t p0, int64_t p1) KS_AVX512_CLONE {
    // packed: Q (T, p) as A | Kᵀ (p, S) as B | V (S, e) as B | one tile's
    // probabilities (kBr, kBc) as A | V's last partial chunk of 32 keys as B
    thread_local std::vector<uint16_t> qa, kt, vb, pa, vtail;
    grow(qa, d.tp() * lq);
    grow(kt, d.pp() * d.sp());
    grow(vb, d.sp() * d.ep());
    grow(pa, kBr * lp);
    grow(vtail, kBlock * d.ep());
    std::vector<float> sbuf(size_t(kBr * kBc)), fbuf(prm.dropout ? size_t(kBc) : 0), acc(size_t(kBr * d.E));
    std::vector<float> m(static_cast<size_t>(kBr)), l(static_cast<size_t>(kBr));
    for (int64_t pair = p0; pair < p1; ++pair) {
      const bool* pad_b = PAD ? PAD + (pair / d.H) * d.S : nullptr;
      pack_rows(Q.at(pair, 0), Q.ld, d.T, d.P, lq, qa.data());
      pack_cols(K.at(pair, 0), true, K.ld, d.P, d.S, kt.data());
      pack_cols(V.at(pair, 0), false, V.ld, d.S, d.E, vb.data());
      for (int64_t i0 = 0; i0 < d.T; i0 += kBr) {
        const int64_t rows = std::min(kBr, d.T - i0);
        std::fill(acc.begin(), acc.end(), 0.f);
        std::fill(m.begin(), m.end(), kNegInf);
        std::fill(l.begin(), l.end(), 0.f);
        const int64_t jend = key_end(prm, i0 + rows, d.S);
        for (int64_t j0 = 0; j0 < jend; j0 += kBc) {
          const int64_t cols = std::min(kBc, jend - j0);
          float* s = sbuf.data();
          packed_product(path, qa.data() + i0 * lq, lq, kt.data() + j0 * d.pp(), d.pp() * kPanel, rows, cols, d.pp(), s,
                         cols, false);  // q kᵀ, (rows, cols)
          for (int64_t r = 0; r < rows; ++r) {
            float* sr = s + r * cols;
            for (int64_t c = 0; c < cols; ++c) sr[c] *= scale;
            online_softmax_row(sr, cols, visible_prefix(prm, i0 + r, j0, cols), pad_b ? pad_b + j0 : nullptr,
                               m[size_t(r)], l[size_t(r)], acc.data() + r * d.E, d.E);
            if (prm.dropout) {
              float* f = fbuf.data();
              dropout_factors(f, cols, weight_index(pair, d.T, d.S, i0 + r, j0), prm);
              for (int64_t c = 0; c < cols; ++c) sr[c] *= f[c];
            }
          }
          pack_rows(s, cols, rows, cols, lp, pa.data());
          // acc += p v. Keys past `cols` in V's packed chunk of 32 are real
          // keys this tile must not touch (0·inf would be NaN): a partial last
          // chunk multiplies a zero-padded copy of its keys instead.
          const int64_t whole = cols / kBlock * kBlock;
          if (whole > 0)
            packed_product(path, pa.data(), lp, vb.data() + j0 * kPanel, d.sp() * kPanel, rows, d.E, whole, acc.data(),
                           d.E, true);
          if (whole < cols) {
            pack_b(V.at(pair, j0 + whole), false, V.ld, cols - whole, d.E, kBlock, 0, d.ep() / kPanel, vtail.data());
            packed_product(path, pa.data() + whole, lp, vtail.data(), kBlock * kPanel, rows, d.E, kBlock, acc.data(),
                           d.E, true);
          }
        }
        finish_rows(O + (pair * d.T + i0) * d.E, L + pair * d.T + i0, acc.data(), m.data(), l.data(), rows, d.E);
      }
    }
  });
}

void sdpa_backward_bf16(const Tensor& dq, const Tensor& dk, const Tensor& dv, const Tensor& g_in, const Tensor& q_in,
                        const Tensor& k_in, const Tensor& v_in, const Tensor& out, const Tensor& lse,
                        const Tensor& pad_in, const SdpaParams& prm) {
  const Mat<float> Q(q_in), K(k_in), V(v_in), G(g_in);
  const Tensor pad = pad_in.defined() ? contiguous_raw(pad_in) : Tensor();
  const Geometry d{q_in.size(0), q_in.size(1), q_in.size(2), k_in.size(2), q_in.size(3), v_in.size(3)};
  const float* O = out.data<float>();
  const float* L = lse.data<float>();
  const bool* PAD = pad.defined() ? pad.data<bool>() : nullptr;
  float *dQ = dq.data<float>(), *dK = dk.data<float>(), *dV = dv.data<float>();
  const CpuGemmPath path = cpu_gemm_path();
  const float scale = float(prm.scale);
  const int64_t lq = a_stride(d.P), lg = a_stride(d.E), lr = a_stride(kBr), lc = a_stride(kBcBack);
  const int64_t tp = d.tp(), sp = d.sp(), pp = d.pp(), ep = d.ep();
  parallel_for(
      0, d.B * d.H, attention_grain(d.T * d.S * (2 * d.P + 3 * d.E)), [&](int64_t p0, int64_t p1) KS_AVX512_CLONE {
        // packed, once per (b, h): Q and dO as A; Kᵀ, Vᵀ, K, Q, dO as B; per tile: Wᵀ, dS, dSᵀ as A
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
        for (int64_t pair = p0; pair < p1; ++pair) {
          const float *Op = O + pair * d.T * d.E, *Lp = L + pair * d.T;
          float *dQp = dQ + pair * d.T * d.P, *dKp = dK + pair * d.S * d.P, *dVp = dV + pair * d.S * d.E;
          const bool* pad_b = PAD ? PAD + (pair / d.H) * d.S : nullptr;
          row_dots(D, G.at(pair, 0), G.ld, Op, d.T, d.E);
          pack_rows(Q.at(pair, 0), Q.ld, d.T, d.P, lq, qa.data());
          pack_rows(G.at(pair, 0), G.ld, d.T, d.E, lg, ga.data());
          pack_cols(K.at(pair, 0), true, K.ld, d.P, d.S, kt.data());
          pack_cols(V.at(pair, 0), true, V.ld, d.E, d.S, vt.data());
          pack_cols(K.at(pair, 0), false, K.ld, d.S, d.P, kb.data());
          pack_cols(Q.at(pair, 0), false, Q.ld, d.T, d.P, qb.data());
          pack_cols(G.at(pair, 0), false, G.ld, d.T, d.E, gb.data());
          std::fill(dQp, dQp + d.T * d.P, 0.f);
          std::fill(dKp, dKp + d.S * d.P, 0.f);
          std::fill(dVp, dVp + d.S * d.E, 0.f);
          for (int64_t j0 = 0; j0 < d.S; j0 += kBcBack) {
            const int64_t cols = std::min(kBcBack, d.S - j0), cols_p = round_up(cols, kBlock);
            float *dKj = dKp + j0 * d.P, *dVj = dVp + j0 * d.E;
            for (int64_t i0 = first_query(prm, j0, d.T) / kBr * kBr; i0 < d.T; i0 += kBr) {
              const int64_t rows = std::min(kBr, d.T - i0), rows_p = round_up(rows, kBlock);
              packed_product(path, qa.data() + i0 * lq, lq, kt.data() + j0 * pp, pp * kPanel, rows, cols, pp, P, cols,
                             false);  // scores, unscaled
              for (int64_t r = 0; r < rows; ++r) {
                float* pr = P + r * cols;
                const float lse_r = Lp[i0 + r];
                for (int64_t c = 0; c < cols; ++c) pr[c] *= scale;
                probability_row(pr, cols, lse_r == kNegInf ? 0 : visible_prefix(prm, i0 + r, j0, cols),
                                pad_b ? pad_b + j0 : nullptr, lse_r);
                if (prm.dropout) dropout_factors(W + r * cols, cols, weight_index(pair, d.T, d.S, i0 + r, j0), prm);
              }
              packed_product(path, ga.data() + i0 * lg, lg, vt.data() + j0 * ep, ep * kPanel, rows, cols, ep, dP, cols,
                             false);  // dO vᵀ
              if (prm.dropout)
                for (int64_t x = 0; x < rows * cols; ++x) {
                  dP[x] *= W[x];
                  W[x] *= P[x];
                }
              pack_rows_transposed(prm.dropout ? W : P, cols, rows, cols, lr, wt.data());
              packed_product(path, wt.data(), lr, gb.data() + i0 * kPanel, tp * kPanel, cols, d.E, rows_p, dVj, d.E,
                             true);  // dV += Wᵀ dO
              score_gradient(dP, P, D + i0, rows, cols);
              pack_rows(dP, cols, rows, cols, lc, dsa.data());
              pack_rows_transposed(dP, cols, rows, cols, lr, dst.data());
              packed_product(path, dsa.data(), lc, kb.data() + j0 * kPanel, sp * kPanel, rows, d.P, cols_p,
                             dQp + i0 * d.P, d.P, true);  // dQ += dS k (scaled below)
              packed_product(path, dst.data(), lr, qb.data() + i0 * kPanel, tp * kPanel, cols, d.P, rows_p, dKj, d.P,
                             true);  // dK += dSᵀ q (scaled below)
            }
          }
          for (int64_t x = 0; x < d.T * d.P; ++x) dQp[x] *= scale;
          for (int64_t x = 0; x < d.S * d.P; ++x) dKp[x] *= scale;
        }
      });
}

}  // namespace ks::cpu
