// ops/cpu/mixture_attention.cpp — CPU kernels of mixture_attention: tiled,
// FlashAttention-2 style like ops/cpu/attention.cpp, with the M component
// score tiles of each key tile combined per key before the online softmax
// (math in ops/mixture_attention.h, per-key formulas in
// ops/mixture_attention_formulas.h). Never holds more than M (query tile,
// key tile) blocks of logits.
//
// Forward: one task per (b, h, query tile of kBr rows), walking the key tiles
// (kBc keys) its rows can see. Per tile: M GEMMs x_r = q k_rᵀ·scale, plus
// bias_r, hidden keys set to -inf; per row the tile max of max_r x_r updates
// the running max m, the key weights Σ_r exp(x_r − m) (hard: exp(max_r x_r −
// m)) enter the running sum l, are multiplied by the dropout factors, and one
// GEMM adds weights·v to the output accumulator. Soft-E totals, when asked
// for, sum γ per task in double; the tasks' sums are added in task order.
// Backward: one task per (b, h): D_i = dO_i·O_i, then for each key tile
// (kBcBack keys) each query tile that sees it: the M logit tiles again,
// P_r = exp(x_r − lse) (hard: at the first argmax only), A = Σ_r P_r,
// dA = f∘(dO vᵀ), W = A∘f, dx_r = P_r∘(dA − D); dV += Wᵀ dO, dq += scale·dx_r k_r,
// dk_r += scale·dx_rᵀ q, dbias_r += Σ_i dx_r (in double).
// That is M + 1 GEMMs per tile forward and 3M + 2 backward; every one of
// them goes through cpu::gemm (ops/cpu/attention_products.h) on the calling thread,
// at the process's matmul precision.
//
// float32 inputs compute in float32 (BLAS and the running sums), float64 in
// float64. The task bodies run in 512-bit registers where the CPU has
// AVX-512 (avx512_clone.h: the same operations in the same order, the same
// bits). Operands are read where they lie when BLAS can (unit column
// stride), else copied contiguous once; results do not depend on the thread
// count. The dropout mask is drawn from Philox exactly as ops/cpu/dropout.cpp
// draws it for the (B, h, T, S) weights.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "core/copy.h"
#include "core/parallel.h"
#include "ops/cpu/attention_products.h"
#include "ops/cpu/attention_tiles.h"
#include "ops/cpu/avx512_clone.h"
#include "ops/cpu/row_math.h"
#include "ops/mixture_attention.h"
#include "ops/mixture_attention_formulas.h"
#include "ops/through_float32.h"

namespace ks::cpu {
namespace {

using namespace mixture_attention_formulas;

// Query rows per tile, keys per tile (forward and backward). A forward task
// holds M + 1 (64, 128) blocks: 96 KiB of float32 at M = 2, within L2.
constexpr int64_t kBr = 64;
constexpr int64_t kBc = 128;
constexpr int64_t kBcBack = 64;

template <class T> constexpr T kNegInf = -std::numeric_limits<T>::infinity();

// The bias (B, h, M, S) view, each (b, h, r) row with unit stride (stride-0
// broadcasts over b, h or r are read in place).
template <class T> struct BiasRows {
  Tensor held;
  const T* base = nullptr;
  int64_t sb = 0, sh = 0, sm = 0, H = 1;
  explicit BiasRows(const Tensor& t) : H(t.size(1)) {
    held = (t.stride(3) == 1 || t.size(3) <= 1) ? t : contiguous_raw(t);
    base = held.data<T>();
    sb = held.stride(0);
    sh = held.stride(1);
    sm = held.stride(2);
  }
  const T* at(int64_t pair, int64_t r, int64_t j) const {
    return base + (pair / H) * sb + (pair % H) * sh + r * sm + j;
  }
};

// One row of the M logit tiles (component r's row at x + r·blk): adds the
// bias, sets the keys the row does not see ([lim, cols) and padded ones) to
// -inf, and writes each key's max_r x into mx.
template <class T>
KS_ROWS_INLINE void logits_row(T* x, int64_t blk, T* mx, const BiasRows<T>& bias, int64_t pair, int64_t j0, int64_t M,
                               int64_t cols, int64_t lim, const bool* pad) {
  std::fill(mx, mx + cols, kNegInf<T>);
  for (int64_t r = 0; r < M; ++r) {
    T* xr = x + r * blk;
    const T* br = bias.at(pair, r, j0);
    for (int64_t c = 0; c < lim; ++c) xr[c] = logit(xr[c], br[c]);
    for (int64_t c = lim; c < cols; ++c) xr[c] = kNegInf<T>;
    if (pad)
      for (int64_t c = 0; c < lim; ++c)
        if (pad[c]) xr[c] = kNegInf<T>;
    for (int64_t c = 0; c < cols; ++c) mx[c] = std::max(mx[c], xr[c]);
  }
}

// Soft-E: adds Σ_c γ_rc of one row's keys to tot[r] (u: scratch of cols).
template <class T>
KS_ROWS_INLINE void add_responsibilities(double* tot, const T* x, int64_t blk, const T* mx, T* u, int64_t M,
                                         int64_t cols, bool hard) {
  if (hard) {  // γ = 1 at the first r reaching the max, on keys some component reaches
    for (int64_t c = 0; c < cols; ++c) {
      if (mx[c] == kNegInf<T>) continue;
      for (int64_t r = 0; r < M; ++r)
        if (x[r * blk + c] == mx[c]) {
          tot[r] += 1;
          break;
        }
    }
    return;
  }
  std::fill(u, u + cols, T(0));
  for (int64_t r = 0; r < M; ++r)
    for (int64_t c = 0; c < cols; ++c) u[c] += responsibility_term(x[r * blk + c], mx[c]);
  for (int64_t c = 0; c < cols; ++c) u[c] = responsibility_norm(u[c]);
  for (int64_t r = 0; r < M; ++r) {
    double acc = 0;
    for (int64_t c = 0; c < cols; ++c) acc += double(responsibility_term(x[r * blk + c], mx[c]) * u[c]);
    tot[r] += acc;
  }
}

template <class T>
void forward_typed(const Tensor& out, const Tensor& lse, const Tensor& totals, const Tensor& q_in, const Tensor& k_in,
                   const Tensor& bias_in, const Tensor& v_in, const Tensor& pad_in, const SdpaParams& prm, bool hard) {
  const Mat<T> Q(q_in), K(k_in), V(v_in);
  const BiasRows<T> bias(bias_in);
  const Tensor pad = pad_in.defined() ? contiguous_raw(pad_in) : Tensor();
  const bool* PAD = pad.defined() ? pad.data<bool>() : nullptr;
  const int64_t B = q_in.size(0), H = q_in.size(1), T_ = q_in.size(2), P = q_in.size(3);
  const int64_t M = k_in.size(2), S = k_in.size(3), E = v_in.size(3);
  T *O = out.data<T>(), *L = lse.data<T>();
  const int64_t tiles = (T_ + kBr - 1) / kBr;
  const T scale = T(prm.scale);
  const bool want_totals = totals.defined();
  std::vector<double> partial(want_totals ? size_t(B * H * tiles * M) : 0);  // per task, added in order below
  // A tile has at most tile_rows query rows: kBr, or all T_ of a short
  // sequence (one while decoding, where buffers sized for kBr rows were M + 1
  // blocks of kBr x kBc values zeroed at every call of every layer).
  const int64_t tile_rows = std::min(kBr, T_);
  const int64_t blk = tile_rows * kBc;
  const int64_t task_work = tile_rows * S * (M * P + E);  // multiply-adds, at most
  const auto tasks = [&](int64_t t0, int64_t t1) KS_INLINE_LAMBDA {
    // x: M logit blocks | w: the key weights | mx, f, u: one row each
    std::vector<T> buf(size_t((M + 1) * blk + 3 * kBc)), acc(size_t(tile_rows * E));
    T *X = buf.data(), *W = X + M * blk, *mx = W + blk, *f = mx + kBc, *u = f + kBc;
    std::vector<T> m(static_cast<size_t>(tile_rows)), l(static_cast<size_t>(tile_rows));
    for (int64_t task = t0; task < t1; ++task) {
      const int64_t pair = task / tiles, i0 = (task % tiles) * kBr, rows = std::min(kBr, T_ - i0);
      const T* Qi = Q.at(pair, i0);
      const bool* pad_b = PAD ? PAD + (pair / H) * S : nullptr;
      double* tot = want_totals ? partial.data() + task * M : nullptr;
      if (tot) std::fill(tot, tot + M, 0.0);
      std::fill(acc.begin(), acc.end(), T(0));
      std::fill(m.begin(), m.end(), kNegInf<T>);
      std::fill(l.begin(), l.end(), T(0));
      const int64_t jend = key_end(prm, i0 + rows, S);
      for (int64_t j0 = 0; j0 < jend; j0 += kBc) {
        const int64_t cols = std::min(kBc, jend - j0);
        for (int64_t r = 0; r < M; ++r)  // x_r = q k_rᵀ·scale (rows, cols), row stride cols
          score_tile(X + r * blk, rows, cols, P, scale, Qi, Q.ld, K.at(pair, j0, r), K.ld);
        for (int64_t row = 0; row < rows; ++row) {
          T* x = X + row * cols;  // component r's row at x + r·blk
          T* w = W + row * cols;
          const int64_t i = i0 + row, lim = visible_prefix(prm, i, j0, cols);
          logits_row(x, blk, mx, bias, pair, j0, M, cols, lim, pad_b ? pad_b + j0 : nullptr);
          if (tot) add_responsibilities(tot, x, blk, mx, u, M, cols, hard);
          const T m_old = m[size_t(row)], m_new = std::max(m_old, row_max(mx, cols));
          if (m_new == kNegInf<T>) {  // nothing seen yet: this tile adds nothing to the row
            std::fill(w, w + cols, T(0));
            continue;
          }
          if (hard) {
            for (int64_t c = 0; c < cols; ++c) w[c] = forward_term(mx[c], m_new);
          } else {
            for (int64_t c = 0; c < cols; ++c) w[c] = forward_term(x[c], m_new);
            for (int64_t r = 1; r < M; ++r) {
              const T* xr = x + r * blk;
              for (int64_t c = 0; c < cols; ++c) w[c] += forward_term(xr[c], m_new);
            }
          }
          T sum = 0;
          for (int64_t c = 0; c < cols; ++c) sum += w[c];
          const T alpha = rescale(m_old, m_new);
          l[size_t(row)] = l[size_t(row)] * alpha + sum;
          m[size_t(row)] = m_new;
          if (alpha != T(1)) {
            T* ar = acc.data() + row * E;
            for (int64_t c = 0; c < E; ++c) ar[c] *= alpha;
          }
          if (prm.dropout) {  // after the weights entered l, as the composed softmax → dropout
            dropout_factors(f, cols, weight_index(pair, T_, S, i, j0), prm);
            for (int64_t c = 0; c < cols; ++c) w[c] *= f[c];
          }
        }
        add_weighted_values(acc.data(), rows, E, cols, W, V.at(pair, j0), V.ld);  // acc += w v
      }
      T* Oi = O + (pair * T_ + i0) * E;
      T* Li = L + pair * T_ + i0;
      for (int64_t row = 0; row < rows; ++row) {
        const T norm = out_norm(l[size_t(row)]);
        for (int64_t c = 0; c < E; ++c) Oi[row * E + c] = acc[size_t(row * E + c)] * norm;
        Li[row] = row_lse(m[size_t(row)], l[size_t(row)]);
      }
    }
  };
  parallel_for(0, B * H * tiles, attention_grain(task_work),
               [&](int64_t t0, int64_t t1) { run_widest(tasks, t0, t1); });
  if (!want_totals) return;
  T* tot = totals.data<T>();  // (B, h, M): each pair's tiles added in order
  for (int64_t pair = 0; pair < B * H; ++pair)
    for (int64_t r = 0; r < M; ++r) {
      double s = 0;
      for (int64_t t = 0; t < tiles; ++t) s += partial[size_t((pair * tiles + t) * M + r)];
      tot[pair * M + r] = T(s);
    }
}

template <class T>
void backward_typed(const Tensor& dq, const Tensor& dk, const Tensor& dbias, const Tensor& dv, const Tensor& g_in,
                    const Tensor& q_in, const Tensor& k_in, const Tensor& bias_in, const Tensor& v_in,
                    const Tensor& out, const Tensor& lse, const Tensor& pad_in, const SdpaParams& prm, bool hard) {
  const Mat<T> Q(q_in), K(k_in), V(v_in), G(g_in);
  const BiasRows<T> bias(bias_in);
  const Tensor pad = pad_in.defined() ? contiguous_raw(pad_in) : Tensor();
  const bool* PAD = pad.defined() ? pad.data<bool>() : nullptr;
  const int64_t B = q_in.size(0), H = q_in.size(1), T_ = q_in.size(2), P = q_in.size(3);
  const int64_t M = k_in.size(2), S = k_in.size(3), E = v_in.size(3);
  const T *O = out.data<T>(), *L = lse.data<T>();
  T *dQ = dq.data<T>(), *dK = dk.data<T>(), *dB = dbias.data<T>(), *dV = dv.data<T>();
  const T scale = T(prm.scale);
  const int64_t blk = std::min(kBr, T_) * kBcBack;  // a tile's query rows: kBr, or all T_ of a short sequence
  const auto pairs = [&](int64_t p0, int64_t p1) KS_INLINE_LAMBDA {
    // x: M blocks (logits, then P_r, then dx_r) | dA | W | mx, f: one row each | D (T)
    std::vector<T> buf(size_t((M + 2) * blk + 2 * kBcBack + T_));
    T *X = buf.data(), *dA = X + M * blk, *W = dA + blk, *mx = W + blk, *f = mx + kBcBack, *D = f + kBcBack;
    std::vector<double> db(size_t(M * S));  // dbias of one pair, summed in double
    for (int64_t pair = p0; pair < p1; ++pair) {
      const T *Op = O + pair * T_ * E, *Lp = L + pair * T_;
      T *dQp = dQ + pair * T_ * P, *dKp = dK + pair * M * S * P, *dVp = dV + pair * S * E;
      const bool* pad_b = PAD ? PAD + (pair / H) * S : nullptr;
      for (int64_t i = 0; i < T_; ++i) {
        T a = 0;
        const T* gi = G.at(pair, i);
        for (int64_t c = 0; c < E; ++c) a += gi[c] * Op[i * E + c];
        D[i] = a;
      }
      std::fill(dQp, dQp + T_ * P, T(0));
      std::fill(dKp, dKp + M * S * P, T(0));
      std::fill(dVp, dVp + S * E, T(0));
      std::fill(db.begin(), db.end(), 0.0);
      for (int64_t j0 = 0; j0 < S; j0 += kBcBack) {
        const int64_t cols = std::min(kBcBack, S - j0);
        const T* Vj = V.at(pair, j0);
        for (int64_t i0 = first_query(prm, j0, T_) / kBr * kBr; i0 < T_; i0 += kBr) {
          const int64_t rows = std::min(kBr, T_ - i0);
          const T *Qi = Q.at(pair, i0), *Gi = G.at(pair, i0);
          for (int64_t r = 0; r < M; ++r)
            score_tile(X + r * blk, rows, cols, P, scale, Qi, Q.ld, K.at(pair, j0, r), K.ld);
          weight_grad_tile(dA, rows, cols, E, Gi, G.ld, Vj, V.ld);  // dO vᵀ
          for (int64_t row = 0; row < rows; ++row) {
            T *x = X + row * cols, *w = W + row * cols, *da = dA + row * cols;
            const int64_t i = i0 + row;
            const T lr = Lp[i];
            const int64_t lim = lr == kNegInf<T> ? 0 : visible_prefix(prm, i, j0, cols);
            if (lim == 0) {  // the row sees none of these keys (or none at all: lse = -inf)
              for (int64_t r = 0; r < M; ++r) std::fill(x + r * blk, x + r * blk + cols, T(0));
              std::fill(w, w + cols, T(0));
              continue;
            }
            logits_row(x, blk, mx, bias, pair, j0, M, cols, lim, pad_b ? pad_b + j0 : nullptr);
            if (hard) {
              // P_r = A at the first r reaching the max, else 0; mx becomes "not yet chosen".
              for (int64_t c = 0; c < cols; ++c) w[c] = component_prob(mx[c], lr);
              for (int64_t r = 0; r < M; ++r) {
                T* xr = x + r * blk;
                for (int64_t c = 0; c < cols; ++c) {
                  const bool pick = xr[c] == mx[c];
                  xr[c] = pick ? w[c] : T(0);
                  mx[c] = pick ? std::numeric_limits<T>::quiet_NaN() : mx[c];  // never equal again
                }
              }
            } else {
              std::fill(w, w + cols, T(0));
              for (int64_t r = 0; r < M; ++r) {
                T* xr = x + r * blk;
                for (int64_t c = 0; c < cols; ++c) {
                  xr[c] = component_prob(xr[c], lr);  // -inf -> 0
                  w[c] += xr[c];
                }
              }
            }
            if (prm.dropout) {
              dropout_factors(f, cols, weight_index(pair, T_, S, i, j0), prm);
              for (int64_t c = 0; c < cols; ++c) {
                da[c] *= f[c];
                w[c] *= f[c];
              }
            }
            const T Di = D[i];
            for (int64_t r = 0; r < M; ++r) {
              T* xr = x + r * blk;
              for (int64_t c = 0; c < cols; ++c) xr[c] = logit_grad(xr[c], da[c], Di);
            }
          }
          add_value_grad(dVp + j0 * E, cols, E, rows, W, Gi, G.ld);  // dV += Wᵀ dO
          for (int64_t r = 0; r < M; ++r) {
            const T* dx = X + r * blk;
            T* dKr = dKp + (r * S + j0) * P;
            add_query_key_grads(dQp + i0 * P, dKr, rows, cols, P, scale, dx, Qi, Q.ld, K.at(pair, j0, r), K.ld);
            double* dbr = db.data() + r * S + j0;
            for (int64_t row = 0; row < rows; ++row)
              for (int64_t c = 0; c < cols; ++c) dbr[c] += double(dx[row * cols + c]);
          }
        }
      }
      T* dBp = dB + pair * M * S;
      for (int64_t x = 0; x < M * S; ++x) dBp[x] = T(db[size_t(x)]);
    }
  };
  parallel_for(0, B * H, attention_grain(T_ * S * (3 * M * P + 2 * E)),
               [&](int64_t p0, int64_t p1) { run_widest(pairs, p0, p1); });
}

void mixture_attention_forward_cpu(const Tensor& out, const Tensor& lse, const Tensor& totals, const Tensor& q,
                                   const Tensor& k, const Tensor& bias, const Tensor& v, const Tensor& key_padding,
                                   const SdpaParams& prm, bool hard) {
  dispatch_floating(out.dtype(), "mixture_attention", [&](auto tag) {
    forward_typed<typename decltype(tag)::type>(out, lse, totals, q, k, bias, v, key_padding, prm, hard);
  });
}

void mixture_attention_backward_cpu(const Tensor& dq, const Tensor& dk, const Tensor& dbias, const Tensor& dv,
                                    const Tensor& g, const Tensor& q, const Tensor& k, const Tensor& bias,
                                    const Tensor& v, const Tensor& out, const Tensor& lse, const Tensor& key_padding,
                                    const SdpaParams& prm, bool hard) {
  dispatch_floating(g.dtype(), "mixture_attention backward", [&](auto tag) {
    backward_typed<typename decltype(tag)::type>(dq, dk, dbias, dv, g, q, k, bias, v, out, lse, key_padding, prm, hard);
  });
}

}  // namespace
KS_REGISTER_KERNEL(mixture_attention_forward_kernel, CPU,
                   through_float32::mixture_attention_forward<mixture_attention_forward_cpu>);
KS_REGISTER_KERNEL(mixture_attention_backward_kernel, CPU,
                   through_float32::mixture_attention_backward<mixture_attention_backward_cpu>);
}  // namespace ks::cpu
