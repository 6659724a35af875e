// ops/cpu/softmax.cpp — CPU kernels for softmax / log_softmax, forward and
// backward. bfloat16 and float16 run through float32 (through_float32.h).
//
// The input is made contiguous and viewed as (outer, n, inner) around the
// softmax dim. inner == 1 (the last dim, the common case) runs row by row
// over contiguous rows; otherwise a tile of up to kTile neighbouring columns
// is processed together, so the inner loops run over contiguous memory and
// vectorise without transposing anything. Row statistics (max, Σexp, Σg·y)
// accumulate in double; a fully masked row uses max = 0 so that every
// exp(-inf - 0) is 0 and no -inf - -inf NaN appears.
#include <algorithm>
#include <limits>

#include "core/copy.h"
#include "core/parallel.h"
#include "ops/cpu/row_math.h"
#include "ops/softmax.h"
#include "ops/softmax_formulas.h"
#include "ops/through_float32.h"

namespace ks::cpu {
namespace {

constexpr int64_t kGrain = 8192;  // elements per parallel chunk
constexpr int64_t kTile = 64;     // columns per tile when the dim is not the last

using namespace softmax_formulas;

template <class T> constexpr T kNegInf = -std::numeric_limits<T>::infinity();

template <class T, bool Log> void forward_rows(T* y, const T* x, int64_t rows, int64_t n) {
  parallel_for(0, rows, std::max<int64_t>(1, kGrain / n), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const T* xr = x + r * n;
      T* yr = y + r * n;
      const T m = row_shift(row_max(xr, n));
      if constexpr (Log) {
        const double s = lane_sum<double>(n, [&](int64_t i) { return kmath::exp(xr[i] - m); });
        const T ls = row_norm<T, true>(s);
        for (int64_t i = 0; i < n; ++i) yr[i] = softmax_out<T, true>(xr[i], m, ls);
      } else {
        // exp is taken once: stored, summed, then scaled in place.
        for (int64_t i = 0; i < n; ++i) yr[i] = kmath::exp(xr[i] - m);
        const double s = lane_sum<double>(n, [&](int64_t i) { return yr[i]; });
        const T inv = row_norm<T, false>(s);
        for (int64_t i = 0; i < n; ++i) yr[i] *= inv;
      }
    }
  });
}

template <class T, bool Log> void forward_tiles(T* y, const T* x, const Geometry& G) {
  const int64_t n = G.n, inner = G.inner, per_outer = (inner + kTile - 1) / kTile;
  parallel_for(0, G.outer * per_outer, std::max<int64_t>(1, kGrain / (n * kTile)), [&](int64_t b, int64_t e) {
    T m[kTile], ls[kTile];
    double s[kTile];
    for (int64_t t = b; t < e; ++t) {
      const int64_t o = t / per_outer, c0 = (t % per_outer) * kTile, w = std::min(kTile, inner - c0);
      const T* xo = x + o * n * inner + c0;
      T* yo = y + o * n * inner + c0;
      std::fill(m, m + w, kNegInf<T>);
      for (int64_t k = 0; k < n; ++k) {
        const T* xk = xo + k * inner;
        for (int64_t j = 0; j < w; ++j) m[j] = xk[j] > m[j] ? xk[j] : m[j];
      }
      for (int64_t j = 0; j < w; ++j) m[j] = row_shift(m[j]);
      std::fill(s, s + w, 0.0);
      for (int64_t k = 0; k < n; ++k) {
        const T* xk = xo + k * inner;
        T* yk = yo + k * inner;
        for (int64_t j = 0; j < w; ++j) {
          const T v = kmath::exp(xk[j] - m[j]);
          if constexpr (!Log) yk[j] = v;
          s[j] += double(v);
        }
      }
      if constexpr (Log) {
        for (int64_t j = 0; j < w; ++j) ls[j] = row_norm<T, true>(s[j]);
        for (int64_t k = 0; k < n; ++k) {
          const T* xk = xo + k * inner;
          T* yk = yo + k * inner;
          for (int64_t j = 0; j < w; ++j) yk[j] = softmax_out<T, true>(xk[j], m[j], ls[j]);
        }
      } else {
        for (int64_t j = 0; j < w; ++j) ls[j] = row_norm<T, false>(s[j]);  // 1 / Σ
        for (int64_t k = 0; k < n; ++k) {
          T* yk = yo + k * inner;
          for (int64_t j = 0; j < w; ++j) yk[j] *= ls[j];
        }
      }
    }
  });
}

// A log_softmax output row that is -inf throughout came from a fully masked row.
template <class T> bool all_neg_inf(const T* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    if (y[i] != kNegInf<T>) return false;
  return true;
}

template <class T, bool Log> void backward_rows(T* dx, const T* g, const T* y, int64_t rows, int64_t n) {
  parallel_for(0, rows, std::max<int64_t>(1, kGrain / n), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const T* gr = g + r * n;
      const T* yr = y + r * n;
      T* dr = dx + r * n;
      if constexpr (Log) {
        if (all_neg_inf(yr, n)) {
          std::fill(dr, dr + n, T(0));
          continue;
        }
        const T sg = T(lane_sum<double>(n, [&](int64_t i) { return gr[i]; }));
        for (int64_t i = 0; i < n; ++i) dr[i] = softmax_grad<T, true>(gr[i], yr[i], sg);
      } else {
        const T dot = T(lane_sum<double>(n, [&](int64_t i) { return double(gr[i]) * double(yr[i]); }));
        for (int64_t i = 0; i < n; ++i) dr[i] = softmax_grad<T, false>(gr[i], yr[i], dot);
      }
    }
  });
}

template <class T, bool Log> void backward_tiles(T* dx, const T* g, const T* y, const Geometry& G) {
  const int64_t n = G.n, inner = G.inner, per_outer = (inner + kTile - 1) / kTile;
  parallel_for(0, G.outer * per_outer, std::max<int64_t>(1, kGrain / (n * kTile)), [&](int64_t b, int64_t e) {
    double acc[kTile];
    T a[kTile];
    // log_softmax: 1 if the column has a finite output, else 0 (a multiplier,
    // not a branch, so that the loop below vectorises).
    T live[kTile];
    for (int64_t t = b; t < e; ++t) {
      const int64_t o = t / per_outer, c0 = (t % per_outer) * kTile, w = std::min(kTile, inner - c0);
      const int64_t base = o * n * inner + c0;
      std::fill(acc, acc + w, 0.0);
      std::fill(live, live + w, T(0));
      for (int64_t k = 0; k < n; ++k) {
        const T* gk = g + base + k * inner;
        const T* yk = y + base + k * inner;
        for (int64_t j = 0; j < w; ++j) {
          if constexpr (Log) {
            acc[j] += double(gk[j]);
            live[j] = yk[j] != kNegInf<T> ? T(1) : live[j];
          } else {
            acc[j] += double(gk[j]) * double(yk[j]);
          }
        }
      }
      for (int64_t j = 0; j < w; ++j) a[j] = T(acc[j]);
      for (int64_t k = 0; k < n; ++k) {
        const T* gk = g + base + k * inner;
        const T* yk = y + base + k * inner;
        T* dk = dx + base + k * inner;
        for (int64_t j = 0; j < w; ++j) {
          if constexpr (Log)
            dk[j] = softmax_grad<T, true>(gk[j], yk[j], a[j]) * live[j];
          else
            dk[j] = softmax_grad<T, false>(gk[j], yk[j], a[j]);
        }
      }
    }
  });
}

template <bool Log, class T> void run_forward(T* y, const T* x, const Geometry& G) {
  if (G.inner == 1)
    forward_rows<T, Log>(y, x, G.outer, G.n);
  else
    forward_tiles<T, Log>(y, x, G);
}

template <bool Log, class T> void run_backward(T* dx, const T* g, const T* y, const Geometry& G) {
  if (G.inner == 1)
    backward_rows<T, Log>(dx, g, y, G.outer, G.n);
  else
    backward_tiles<T, Log>(dx, g, y, G);
}

void softmax_cpu(bool log, const Tensor& out, const Tensor& x_in, int64_t dim) {
  forward_entry(out, x_in, dim, log, [&](auto tag, auto is_log, const Tensor& x, const Geometry& G) {
    using T = typename decltype(tag)::type;
    run_forward<decltype(is_log)::value>(out.data<T>(), x.data<T>(), G);
  });
}

void softmax_backward_cpu(bool log, const Tensor& dx, const Tensor& g_in, const Tensor& y_in, int64_t dim) {
  backward_entry(dx, g_in, y_in, dim, log,
                 [&](auto tag, auto is_log, const Tensor& g, const Tensor& y, const Geometry& G) {
                   using T = typename decltype(tag)::type;
                   run_backward<decltype(is_log)::value>(dx.data<T>(), g.data<T>(), y.data<T>(), G);
                 });
}

}  // namespace
KS_REGISTER_KERNEL(softmax_kernel, CPU, through_float32::softmax<softmax_cpu>);
KS_REGISTER_KERNEL(softmax_backward_kernel, CPU, through_float32::softmax_backward<softmax_backward_cpu>);
}  // namespace ks::cpu
