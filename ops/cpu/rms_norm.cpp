// ops/cpu/rms_norm.cpp — CPU kernels for rms_norm.
//
// Rows are contiguous (inputs are made so at entry) and independent, so the
// forward and the dx part of the backward run in parallel over rows; mean(x²)
// accumulates in double with lane accumulators (row_math.h). dweight and
// dbias are column sums over fixed row blocks added in block order
// (cpu/norm_rows.h), as layer_norm's: deterministic for any thread count.
#include <algorithm>

#include "core/parallel.h"
#include "ops/cpu/norm_rows.h"
#include "ops/cpu/row_math.h"
#include "ops/rms_norm.h"
#include "ops/rms_norm_formulas.h"
#include "ops/through_float32.h"

namespace ks::cpu {
namespace {

using namespace rms_norm_formulas;
using namespace norm_rows;

template <class T, bool HasW, bool HasB>
void forward_rows(T* y, double* rstd, const T* x, const T* w, const T* b, int64_t M, int64_t N, double eps) {
  const double inv_n = N > 0 ? 1.0 / double(N) : 0.0;
  parallel_for(0, M, std::max<int64_t>(1, kGrain / std::max<int64_t>(N, 1)), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const T* xr = x + r * N;
      T* yr = y + r * N;
      const double ms = lane_sum<double>(N,
                                         [&](int64_t i) {
                                           const double v = double(xr[i]);
                                           return v * v;
                                         }) *
                        inv_n;
      const double rs = rstd_of(ms, eps);
      rstd[r] = rs;
      for (int64_t i = 0; i < N; ++i) yr[i] = affine<T, HasW, HasB>(double(xr[i]) * rs, w, b, i);
    }
  });
}

void rms_norm_cpu(const Tensor& y, const Tensor& rstd, const Tensor& x_in, const Tensor& w_in, const Tensor& b_in,
                  double eps) {
  forward_entry(y, rstd, x_in, w_in, b_in, [&](auto tag, const ForwardInputs& in) {
    using T = typename decltype(tag)::type;
    with_affine(in.w.defined(), in.b.defined(), [&](auto has_w, auto has_b) {
      forward_rows<T, decltype(has_w)::value, decltype(has_b)::value>(y.data<T>(), rstd.data<double>(), in.x.data<T>(),
                                                                      ptr_or_null<T>(in.w), ptr_or_null<T>(in.b), in.M,
                                                                      in.N, eps);
    });
  });
}

// dx_i = rstd · (gw_i - x̂_i · mean(gw · x̂)),  gw = g · weight, x̂ = x · rstd.
template <class T, bool HasW>
void backward_rows(T* dx, double* pw, double* pb, const T* g, const T* x, const double* rstd, const T* w, int64_t r0,
                   int64_t r1, int64_t N) {
  const double inv_n = 1.0 / double(N);
  for (int64_t r = r0; r < r1; ++r) {
    const T* gr = g + r * N;
    const T* xr = x ? x + r * N : nullptr;
    const double rs = rstd[r];
    auto gw = [&](int64_t i) {
      if constexpr (HasW)
        return double(gr[i]) * double(w[i]);
      else
        return double(gr[i]);
    };
    auto xhat = [&](int64_t i) { return double(xr[i]) * rs; };
    if (dx) {
      const double c = lane_sum<double>(N, [&](int64_t i) { return gw(i) * xhat(i); }) * inv_n;
      T* dr = dx + r * N;
      for (int64_t i = 0; i < N; ++i) dr[i] = T(input_grad(gw(i), xhat(i), c, rs));
    }
    if (pw)
      for (int64_t i = 0; i < N; ++i) pw[i] += double(gr[i]) * xhat(i);
    if (pb)
      for (int64_t i = 0; i < N; ++i) pb[i] += double(gr[i]);
  }
}

void rms_norm_backward_cpu(const Tensor& dx, const Tensor& dw, const Tensor& db, const Tensor& g_in, const Tensor& x_in,
                           const Tensor& rstd, const Tensor& w_in) {
  const BackwardInputs in = backward_inputs(dw, db, g_in, x_in, rstd, w_in);
  if (in.empty) return;
  const Tensor &g = in.g, &x = in.x, &w = in.w;
  const int64_t N = in.N;
  dispatch_floating(g.dtype(), "rms_norm backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* dxp = dx.defined() ? dx.data<T>() : nullptr;
    const double* rs = rstd.data<double>();
    blocked_rows<T>(in.M, N, dw, db, [&](int64_t r0, int64_t r1, double* pwb, double* pbb) {
      if (w.defined())
        backward_rows<T, true>(dxp, pwb, pbb, g.data<T>(), ptr_or_null<T>(x), rs, w.data<T>(), r0, r1, N);
      else
        backward_rows<T, false>(dxp, pwb, pbb, g.data<T>(), ptr_or_null<T>(x), rs, nullptr, r0, r1, N);
    });
  });
}

}  // namespace
KS_REGISTER_KERNEL(rms_norm_kernel, CPU, through_float32::rms_norm<rms_norm_cpu>);
KS_REGISTER_KERNEL(rms_norm_backward_kernel, CPU, through_float32::rms_norm_backward<rms_norm_backward_cpu>);
}  // namespace ks::cpu
