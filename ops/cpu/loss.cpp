// ops/cpu/loss.cpp — CPU kernels for cross_entropy / nll_loss (one kernel
// pair over class rows) and mse_loss.
//
// Targets are validated in one serial pass first, so an out-of-range target
// throws the same message (its first occurrence) for any thread count; that
// pass also counts the non-ignored positions. Rows are then independent.
// cross_entropy computes each row's log-sum-exp in double (max-shifted, so
// large logits do not overflow) and never materialises log-softmax; its
// backward recomputes softmax from the logits and that one number per row.
// The mse sum uses fixed chunks added in order: deterministic for any thread
// count. The float32 class rows also have AVX-512 clones (avx512_clone.h), taken where the CPU has AVX-512: the same
// operations in wider registers, so the same bits.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "core/copy.h"
#include "core/parallel.h"
#include "ops/cpu/loops.h"
#include "ops/cpu/row_math.h"
#include "ops/loss.h"
#include "ops/loss_formulas.h"
#include "ops/through_float32.h"

namespace ks::cpu {
namespace {

constexpr int64_t kGrain = 16384;  // elements per parallel chunk
constexpr int64_t kChunk = 16384;  // elements per partial sum of the mse reduction

using namespace loss_formulas;

// Checks every target and returns how many are not ignored.
int64_t check_targets(const int64_t* t, int64_t P, int64_t C, const ClassLossSpec& spec) {
  int64_t count = 0;
  for (int64_t p = 0; p < P; ++p) {
    if (t[p] == spec.ignore_index) continue;
    if (t[p] < 0 || t[p] >= C) throw_bad_target(spec, t[p], p, C);
    ++count;
  }
  return count;
}

// Rows [b, e) of the loss. KS_ROWS_INLINE so that the AVX-512 clones below
// compile the whole row, its exp and sums included, for 512-bit vectors.
template <class T>
KS_ROWS_INLINE void class_loss_range(T* loss, T* lse, const T* x, const int64_t* t, int64_t C,
                                     const ClassLossSpec& spec, int64_t b, int64_t e) {
  const double eps = spec.label_smoothing;
  for (int64_t p = b; p < e; ++p) {
    if (t[p] == spec.ignore_index) {
      loss[p] = T(0);
      if (lse) lse[p] = T(0);
      continue;
    }
    const T* xr = x + p * C;
    if (!spec.from_logits) {
      loss[p] = -xr[t[p]];
      continue;
    }
    T m = row_max(xr, C);
    if (m == -std::numeric_limits<T>::infinity()) m = 0;
    const double s = lane_sum<double>(C, [&](int64_t i) { return vmath::exp(xr[i] - m); });
    const double l = double(m) + std::log(s);
    const double sum_x = eps > 0 ? lane_sum<double>(C, [&](int64_t i) { return xr[i]; }) : 0.0;
    loss[p] = T(class_row_loss(l, double(xr[t[p]]), sum_x, eps, C));
    lse[p] = T(l);
  }
}
KS_AVX512_CLONE void class_loss_range_avx512(float* loss, float* lse, const float* x, const int64_t* t, int64_t C,
                                             const ClassLossSpec& spec, int64_t b, int64_t e) {
  class_loss_range(loss, lse, x, t, C, spec, b, e);
}

template <class T>
void class_loss_rows(T* loss, T* lse, const T* x, const int64_t* t, int64_t P, int64_t C, const ClassLossSpec& spec) {
  parallel_for(0, P, std::max<int64_t>(1, kGrain / C), [&](int64_t b, int64_t e) {
    if constexpr (std::is_same_v<T, float>)
      if (has_avx512()) return class_loss_range_avx512(loss, lse, x, t, C, spec, b, e);
    class_loss_range(loss, lse, x, t, C, spec, b, e);
  });
}

void class_loss_cpu(const Tensor& loss, const Tensor& lse, const Tensor& denom, const Tensor& x_in,
                    const Tensor& targets_in, const ClassLossSpec& spec) {
  const Tensor x = contiguous_raw(x_in), targets = contiguous_raw(targets_in);
  const int64_t P = x.size(0), C = x.size(1);
  const int64_t count = check_targets(targets.data<int64_t>(), P, C, spec);
  fill_(denom, double(std::max<int64_t>(count, 1)));
  dispatch_floating(x.dtype(), class_loss_name(spec), [&](auto tag) {
    using T = typename decltype(tag)::type;
    class_loss_rows<T>(loss.data<T>(), lse.defined() ? lse.data<T>() : nullptr, x.data<T>(), targets.data<int64_t>(), P,
                       C, spec);
  });
}

// dx_c = g · (softmax_c - q_c), q = (1 - ε)·onehot(t) + ε/C; for nll_loss dx = -g·onehot(t). Rows [b, e).
template <class T>
KS_ROWS_INLINE void class_loss_backward_range(T* dx, const T* g, int64_t gs, const T* x, const T* lse, const int64_t* t,
                                              int64_t C, const ClassLossSpec& spec, int64_t b, int64_t e) {
  const CrossEntropyGrad<T> grad{T(spec.label_smoothing / double(C)), T(1 - spec.label_smoothing)};
  for (int64_t p = b; p < e; ++p) {
    T* dr = dx + p * C;
    if (t[p] == spec.ignore_index) {
      std::fill(dr, dr + C, T(0));
      continue;
    }
    const T gp = g[p * gs];
    if (!spec.from_logits) {
      std::fill(dr, dr + C, T(0));
      dr[t[p]] = -gp;
      continue;
    }
    const T* xr = x + p * C;
    const T l = lse[p];
    for (int64_t c = 0; c < C; ++c) dr[c] = grad(gp, xr[c], l);
    dr[t[p]] -= gp * grad.on;
  }
}
KS_AVX512_CLONE void class_loss_backward_range_avx512(float* dx, const float* g, int64_t gs, const float* x,
                                                      const float* lse, const int64_t* t, int64_t C,
                                                      const ClassLossSpec& spec, int64_t b, int64_t e) {
  class_loss_backward_range(dx, g, gs, x, lse, t, C, spec, b, e);
}

template <class T>
void class_loss_backward_rows(T* dx, const T* g, int64_t gs, const T* x, const T* lse, const int64_t* t, int64_t P,
                              int64_t C, const ClassLossSpec& spec) {
  parallel_for(0, P, std::max<int64_t>(1, kGrain / C), [&](int64_t b, int64_t e) {
    if constexpr (std::is_same_v<T, float>)
      if (has_avx512()) return class_loss_backward_range_avx512(dx, g, gs, x, lse, t, C, spec, b, e);
    class_loss_backward_range(dx, g, gs, x, lse, t, C, spec, b, e);
  });
}

void class_loss_backward_cpu(const Tensor& dx, const Tensor& gpos, const Tensor& x_in, const Tensor& lse,
                             const Tensor& targets_in, const ClassLossSpec& spec) {
  const Tensor targets = contiguous_raw(targets_in);
  const Tensor x = spec.from_logits ? contiguous_raw(x_in) : x_in;
  const int64_t P = dx.size(0), C = dx.size(1);
  dispatch_floating(dx.dtype(), class_loss_name(spec), [&](auto tag) {
    using T = typename decltype(tag)::type;
    class_loss_backward_rows<T>(dx.data<T>(), gpos.data<T>(), gpos.stride(0), x.defined() ? x.data<T>() : nullptr,
                                lse.defined() ? lse.data<T>() : nullptr, targets.data<int64_t>(), P, C, spec);
  });
}

void mse_cpu(const Tensor& out, const Tensor& a_in, const Tensor& b_in, bool reduce, double scale) {
  dispatch_floating(out.dtype(), "mse_loss", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (!reduce) return mse_maps<CpuLoops>::squared_diff<T>(out, a_in, b_in);
    const Tensor a = contiguous_raw(a_in), b = contiguous_raw(b_in);
    const T* ap = a.data<T>();
    const T* bp = b.data<T>();
    const int64_t n = a.numel(), chunks = (n + kChunk - 1) / kChunk;
    std::vector<double> part(static_cast<size_t>(chunks));
    parallel_for(0, chunks, 1, [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) {
        const int64_t off = c * kChunk, len = std::min(kChunk, n - off);
        part[size_t(c)] = lane_sum<double>(len, [&](int64_t i) {
          const double d = double(ap[off + i]) - double(bp[off + i]);
          return d * d;
        });
      }
    });
    double total = 0;
    for (double v : part) total += v;
    out.data<T>()[0] = T(total * scale);
  });
}

}  // namespace
KS_REGISTER_KERNEL(class_loss_kernel, CPU, through_float32::class_loss<class_loss_cpu>);
KS_REGISTER_KERNEL(class_loss_backward_kernel, CPU, through_float32::class_loss_backward<class_loss_backward_cpu>);
KS_REGISTER_KERNEL(mse_kernel, CPU, through_float32::mse<mse_cpu>);
KS_REGISTER_KERNEL(mse_backward_kernel, CPU,
                   through_float32::mse_backward<loss_formulas::mse_maps<CpuLoops>::backward>);
}  // namespace ks::cpu
