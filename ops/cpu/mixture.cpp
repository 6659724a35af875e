// ops/cpu/mixture.cpp — CPU kernels of mixture_softmax, forward and backward.
//
// Work is split by rows (one batch index n and query i). A row's M·S values
// are worked on in a scratch row that stays in L1; every inner loop runs
// over contiguous keys of one component and vectorises (vexp from
// row_math.h; selects and bit masks instead of branches).
//
// Per row, over the visible span [lo, hi) of keys only (outside it A = 0):
//   x_r = scale·s_r + bias_r and mx = max_r x_r  (components())
//   A ∝ exp(mx − m)·u with u = Σ_r exp(x_r − mx), m the largest visible mx
//   γ_r = exp(x_r − mx) / u  (hard: 1 at the first r with x_r = mx, u = 1)
// — no logarithm anywhere; Σ_j A accumulates in double.
//
// γ is written out only when asked for (the soft-E step). Backward does not
// read a saved γ: it recomputes it from the scores, which it keeps anyway, so
// the forward writes M·T·S fewer values — the kernels are bound by memory,
// not by the exps. Backward splits each n's rows into blocks whose size
// depends on the shape alone; a block sums its share of dbias in double and
// the blocks are added in order afterwards, so results never depend on the
// thread count.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <tuple>
#include <type_traits>
#include <vector>

#include "core/copy.h"
#include "core/parallel.h"
#include "ops/cpu/row_math.h"
#include "ops/mixture.h"
#include "ops/mixture_formulas.h"
#include "ops/through_float32.h"

namespace ks::cpu {
namespace {

constexpr int64_t kGrain = 16384;  // score elements per parallel chunk

template <class T> constexpr T kNegInf = -std::numeric_limits<T>::infinity();

using namespace mixture_formulas;

// add[j] = 0 where key j is visible, -inf where masked, for a row of bools
// with stride `step`; returns the visible span [lo, hi) (empty: lo == hi).
// The bools are read as bytes (0 or 1) and turned into float bits with a
// mask, so the contiguous case vectorises.
template <class T> std::pair<int64_t, int64_t> mask_row(T* add, const bool* row, int64_t step, int64_t S) {
  using U = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  constexpr U ninf = std::bit_cast<U>(kNegInf<T>);
  const auto* b = reinterpret_cast<const uint8_t*>(row);
  if (step == 1) {
    for (int64_t j = 0; j < S; ++j) add[j] = std::bit_cast<T>((U(0) - U(b[j])) & ninf);
  } else {
    for (int64_t j = 0; j < S; ++j) add[j] = std::bit_cast<T>((U(0) - U(b[j * step])) & ninf);
  }
  int64_t lo = 0, hi = S;
  while (lo < hi && add[lo] == kNegInf<T>) ++lo;
  while (hi > lo && add[hi - 1] == kNegInf<T>) --hi;
  return {lo, hi};
}

// The mixture over n keys of one row. In: s and b, M component rows of
// stride S. Out: x (M rows of stride n) holds exp(x_r − mx) (hard: the
// one-hot choice of the first r with x_r = mx); mx = max_r x_r; soft only:
// u = Σ_r exp(x_r − mx), in [1, M] (0 for a key whose every x_r is -inf).
// lm (optional): mx + add, the masked maxima.
template <class T>
void components(T* x, T* mx, T* u, T* lm, const T* add, const T* s, const T* b, int64_t M, int64_t S, int64_t n,
                T scale, bool hard) {
  std::fill(mx, mx + n, kNegInf<T>);
  for (int64_t r = 0; r < M; ++r) {
    const T* sk = s + r * S;
    const T* bk = b + r * S;
    T* xk = x + r * n;
    for (int64_t j = 0; j < n; ++j) {
      const T v = component_logit(scale, sk[j], bk[j]);
      xk[j] = v;
      mx[j] = v > mx[j] ? v : mx[j];
    }
  }
  if (lm)
    for (int64_t j = 0; j < n; ++j) lm[j] = mx[j] + add[j];
  // A key whose every x is -inf has max -inf; 0 keeps x − max free of -inf − -inf.
  // Its e's are then 0, as is u.
  T* m0 = u;  // u's storage holds the safe maxima until the sums start
  for (int64_t j = 0; j < n; ++j) m0[j] = mx[j] == kNegInf<T> ? T(0) : mx[j];
  if (!hard) {
    for (int64_t r = 0; r < M; ++r) {
      T* xk = x + r * n;
      for (int64_t j = 0; j < n; ++j) xk[j] = vmath::exp(xk[j] - m0[j]);
    }
  } else {
    for (int64_t r = 0; r < M; ++r) {  // x_r becomes 1 if r is the first component reaching the max
      T* xk = x + r * n;
      for (int64_t j = 0; j < n; ++j) xk[j] = xk[j] == mx[j] ? T(1) : T(0);
    }
    for (int64_t j = 0; j < n; ++j) m0[j] = T(0);  // now: components chosen so far
    for (int64_t r = 0; r < M; ++r) {
      T* xk = x + r * n;
      for (int64_t j = 0; j < n; ++j) {
        xk[j] = m0[j] == T(0) ? xk[j] : T(0);
        m0[j] += xk[j];
      }
    }
  }
  if (!hard) {
    std::fill(u, u + n, T(0));
    for (int64_t r = 0; r < M; ++r) {
      const T* xk = x + r * n;
      for (int64_t j = 0; j < n; ++j) u[j] += xk[j];
    }
  }
}

template <class T>
void forward_rows(T* a, T* g, const T* s, const T* bias, const Tensor& mask, const Geometry& G, T scale, bool hard) {
  const int64_t T_ = G.T, M = G.M, S = G.S, MS = M * S;
  const bool* mbase = mask.defined() ? mask.data<bool>() : nullptr;
  const std::vector<int64_t> moff = mask.defined() ? batch_offsets(mask) : std::vector<int64_t>();
  const int64_t mst = mask.defined() ? mask.stride(-2) : 0, mss = mask.defined() ? mask.stride(-1) : 0;
  parallel_for(0, G.N * T_, std::max<int64_t>(1, kGrain / std::max<int64_t>(MS, 1)), [&](int64_t r0, int64_t r1) {
    std::vector<T> buf(static_cast<size_t>((M + 3) * S), T(0));
    T* add = buf.data();  // 0, or -inf where masked
    T* mx = add + S;
    T* u = mx + S;
    T* x = u + S;  // M rows of the span's length
    for (int64_t row = r0; row < r1; ++row) {
      const int64_t nb = row / T_, i = row % T_;
      T* ar = a + row * S;
      T* gr = g ? g + row * MS : nullptr;
      int64_t lo = 0, hi = S;
      if (mbase) std::tie(lo, hi) = mask_row(add, mbase + moff[size_t(nb)] + i * mst, mss, S);
      const int64_t n = hi - lo;
      std::fill(ar, ar + lo, T(0));
      std::fill(ar + hi, ar + S, T(0));
      if (gr)
        for (int64_t r = 0; r < M; ++r) {
          std::fill(gr + r * S, gr + r * S + lo, T(0));
          std::fill(gr + r * S + hi, gr + (r + 1) * S, T(0));
        }
      if (n == 0) continue;
      components(x, mx, u, ar + lo, add + lo, s + row * MS + lo, bias + nb * MS + lo, M, S, n, scale, hard);
      T* al = ar + lo;  // the masked maxima, then A
      const T m = row_max(al, n);
      if (m == kNegInf<T>) {  // nothing visible: zeros, never NaN
        std::fill(al, al + n, T(0));
        if (gr)
          for (int64_t r = 0; r < M; ++r) std::fill(gr + r * S + lo, gr + r * S + hi, T(0));
        continue;
      }
      // u becomes γ's factor: 1/u (hard: 1) on visible keys, 0 on hidden ones.
      if (!hard) {
        for (int64_t j = 0; j < n; ++j) {
          const T inv = T(1) / u[j], e = vmath::exp(al[j] - m);
          const bool live = al[j] != kNegInf<T>;
          al[j] = e * u[j];
          u[j] = live ? inv : T(0);
        }
      } else {
        for (int64_t j = 0; j < n; ++j) {
          u[j] = al[j] != kNegInf<T> ? T(1) : T(0);
          al[j] = vmath::exp(al[j] - m);
        }
      }
      const double sum = lane_sum<double>(n, [&](int64_t j) { return al[j]; });
      const T inv = T(1.0 / sum);
      for (int64_t j = 0; j < n; ++j) al[j] *= inv;
      if (gr)
        for (int64_t r = 0; r < M; ++r) {
          const T* xk = x + r * n;
          T* gk = gr + r * S + lo;
          for (int64_t j = 0; j < n; ++j) gk[j] = xk[j] * u[j];
        }
    }
  });
}

template <class T>
void backward_rows(T* ds, T* db, const T* ga, const T* a, const T* s, const T* bias, const Geometry& G, T scale,
                   bool hard) {
  const int64_t T_ = G.T, M = G.M, S = G.S, MS = M * S;
  const int64_t rows_per_block = std::max<int64_t>(1, kGrain / std::max<int64_t>(MS, 1));
  const int64_t blocks = (T_ + rows_per_block - 1) / rows_per_block;
  std::vector<double> partial(db ? size_t(G.N * blocks * MS) : 0);
  parallel_for(0, G.N * blocks, 1, [&](int64_t t0, int64_t t1) {
    std::vector<T> buf(static_cast<size_t>((M + 3) * S), T(0));
    T* w = buf.data();  // dℓ / u
    T* mx = w + S;
    T* u = mx + S;
    T* x = u + S;
    for (int64_t task = t0; task < t1; ++task) {
      const int64_t nb = task / blocks, i0 = (task % blocks) * rows_per_block;
      const int64_t i1 = std::min(T_, i0 + rows_per_block);
      double* acc = db ? partial.data() + task * MS : nullptr;
      if (acc) std::fill(acc, acc + MS, 0.0);
      for (int64_t i = i0; i < i1; ++i) {
        const int64_t row = nb * T_ + i;
        const T* gr = ga + row * S;
        const T* ar = a + row * S;
        T* dsr = ds ? ds + row * MS : nullptr;
        // Keys with A = 0 (hidden, or underflowed) pass no gradient: only [lo, hi) is computed.
        int64_t lo = 0, hi = S;
        while (lo < hi && ar[lo] == T(0)) ++lo;
        while (hi > lo && ar[hi - 1] == T(0)) --hi;
        const int64_t n = hi - lo;
        if (dsr)
          for (int64_t r = 0; r < M; ++r) {
            std::fill(dsr + r * S, dsr + r * S + lo, T(0));
            std::fill(dsr + r * S + hi, dsr + (r + 1) * S, T(0));
          }
        if (n == 0) continue;
        components<T>(x, mx, u, nullptr, nullptr, s + row * MS + lo, bias + nb * MS + lo, M, S, n, scale, hard);
        // w = dℓ / u per key (key_weight), with dℓ_j = A_j (g_j − Σ g·A).
        const T* al = ar + lo;
        const T* gl = gr + lo;
        const T dot = T(lane_sum<double>(n, [&](int64_t j) { return double(gl[j]) * double(al[j]); }));
        for (int64_t j = 0; j < n; ++j) w[j] = key_weight(al[j], gl[j], dot, u[j], hard);
        for (int64_t r = 0; r < M; ++r) {
          const T* xk = x + r * n;
          if (dsr) {
            T* dk = dsr + r * S + lo;
            for (int64_t j = 0; j < n; ++j) dk[j] = scale * (xk[j] * w[j]);
          }
          if (acc) {
            double* ak = acc + r * S + lo;
            for (int64_t j = 0; j < n; ++j) ak[j] += double(xk[j]) * double(w[j]);
          }
        }
      }
    }
  });
  if (!db) return;
  parallel_for(0, G.N, std::max<int64_t>(1, kGrain / std::max<int64_t>(blocks * MS, 1)), [&](int64_t n0, int64_t n1) {
    for (int64_t nb = n0; nb < n1; ++nb) {
      T* out = db + nb * MS;
      const double* first = partial.data() + nb * blocks * MS;
      for (int64_t q = 0; q < MS; ++q) {
        double v = 0;
        for (int64_t b = 0; b < blocks; ++b) v += first[b * MS + q];
        out[q] = T(v);
      }
    }
  });
}

void mixture_softmax_cpu(const Tensor& weights, const Tensor& resp, const Tensor& scores_in, const Tensor& bias_in,
                         const Tensor& mask, double scale, bool hard) {
  forward_entry(weights, scores_in, bias_in,
                [&](auto tag, const Tensor& scores, const Tensor& bias, const Geometry& G) {
                  using T = typename decltype(tag)::type;
                  forward_rows<T>(weights.data<T>(), resp.defined() ? resp.data<T>() : nullptr, scores.data<T>(),
                                  bias.data<T>(), mask, G, T(scale), hard);
                });
}

void mixture_softmax_backward_cpu(const Tensor& dscores, const Tensor& dbias, const Tensor& g_in, const Tensor& weights,
                                  const Tensor& scores_in, const Tensor& bias_in, double scale, bool hard) {
  backward_entry(dscores, dbias, g_in, weights, scores_in, bias_in,
                 [&](auto tag, const Tensor& g, const Tensor& scores, const Tensor& bias, const Geometry& G) {
                   using T = typename decltype(tag)::type;
                   backward_rows<T>(dscores.defined() ? dscores.data<T>() : nullptr,
                                    dbias.defined() ? dbias.data<T>() : nullptr, g.data<T>(), weights.data<T>(),
                                    scores.data<T>(), bias.data<T>(), G, T(scale), hard);
                 });
}

}  // namespace
KS_REGISTER_KERNEL(mixture_softmax_kernel, CPU, through_float32::mixture_softmax<mixture_softmax_cpu>);
KS_REGISTER_KERNEL(mixture_softmax_backward_kernel, CPU,
                   through_float32::mixture_softmax_backward<mixture_softmax_backward_cpu>);
}  // namespace ks::cpu
