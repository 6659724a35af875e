// ops/cuda/layer_norm.cu — fused CUDA kernels for layer_norm, forward and
// backward, with the numerics of ops/cpu/layer_norm.cpp.
//
// Rows (M of them, N elements each) are contiguous after the entry copy. The
// forward gives each row a warp (N <= 1024) or a block: mean, then the
// centred variance (two passes, in double), then y; mean and rstd are saved
// in float64. The backward's dx is the same row pattern. dweight and dbias
// are column sums over rows in chunks fixed by M, added in chunk order
// (cuda/norm_columns.cuh) — deterministic, no atomics. bfloat16 and float16
// run through float32 (ops/through_float32.h), as on the CPU.
#include <type_traits>

#include "core/copy.h"
#include "ops/cuda/block_reduce.cuh"
#include "ops/cuda/norm_columns.cuh"
#include "ops/layer_norm.h"
#include "ops/layer_norm_formulas.h"
#include "ops/through_float32.h"

namespace ks::cuda {
namespace {

using namespace layer_norm_formulas;

template <class T, int TPR, bool HasW, bool HasB>
__global__ void forward_rows(T* y, double* mean, double* rstd, const T* x, const T* w, const T* b, int64_t M, int64_t N,
                             double eps) {
  const int lane = row_lane<TPR>();
  const double inv_n = N > 0 ? 1.0 / double(N) : 0.0;
  for (int64_t r = first_row<TPR>(); r < M; r += row_stride<TPR>()) {
    const T* xr = x + r * N;
    T* yr = y + r * N;
    double s = 0;
    for (int64_t i = lane; i < N; i += TPR) s += double(xr[i]);
    const double mu = row_sum<TPR>(s) * inv_n;
    double q = 0;
    for (int64_t i = lane; i < N; i += TPR) {
      const double d = double(xr[i]) - mu;
      q += d * d;
    }
    const double var = row_sum<TPR>(q) * inv_n;
    const double rs = rstd_of(var, eps);
    if (lane == 0) {
      mean[r] = mu;
      rstd[r] = rs;
    }
    for (int64_t i = lane; i < N; i += TPR) yr[i] = affine<T, HasW, HasB>(normalized(double(xr[i]), mu, rs), w, b, i);
  }
}

void layer_norm_cuda(const Tensor& y, const Tensor& mean, const Tensor& rstd, const Tensor& x_in, const Tensor& w_in,
                     const Tensor& b_in, double eps) {
  forward_entry(y, mean, x_in, w_in, b_in, [&](auto tag, const ForwardInputs& in) {
    using T = typename decltype(tag)::type;
    const Tensor &x = in.x, &w = in.w, &b = in.b;
    const int64_t M = in.M, N = in.N;
    const int dev = x.device().index;
    const T* wp = w.defined() ? w.data<T>() : nullptr;
    const T* bp = b.defined() ? b.data<T>() : nullptr;
    const cudaStream_t s = stream(dev);
    DeviceGuard guard(x.device());
    const RowLaunch L = row_launch(M, N, dev);
    with_row_width(L, [&](auto tpr) {
      with_affine(wp != nullptr, bp != nullptr, [&](auto has_w, auto has_b) {
        forward_rows<T, decltype(tpr)::value, decltype(has_w)::value, decltype(has_b)::value>
            <<<L.grid, kThreads, 0, s>>>(y.data<T>(), mean.data<double>(), rstd.data<double>(), x.data<T>(), wp, bp, M,
                                         N, eps);
      });
    });
    KS_CUDA_LAUNCH_CHECK();
  });
}

// dx_i = rstd · (gw_i - mean(gw) - x̂_i · mean(gw · x̂)),  gw = g · weight, x̂ = (x - mean) · rstd.
template <class T, int TPR>
__global__ void backward_dx_rows(T* dx, const T* g, const T* x, const double* mean, const double* rstd, const T* w,
                                 int64_t M, int64_t N) {
  const int lane = row_lane<TPR>();
  const double inv_n = 1.0 / double(N);
  for (int64_t r = first_row<TPR>(); r < M; r += row_stride<TPR>()) {
    const T* gr = g + r * N;
    const T* xr = x + r * N;
    const double mu = mean[r], rs = rstd[r];
    double sa = 0, sc = 0;
    for (int64_t i = lane; i < N; i += TPR) {
      const double gw = w ? double(gr[i]) * double(w[i]) : double(gr[i]);
      sa += gw;
      sc += gw * normalized(double(xr[i]), mu, rs);
    }
    const double a = row_sum<TPR>(sa) * inv_n;
    const double c = row_sum<TPR>(sc) * inv_n;
    T* dr = dx + r * N;
    for (int64_t i = lane; i < N; i += TPR) {
      const double gw = w ? double(gr[i]) * double(w[i]) : double(gr[i]);
      dr[i] = T(input_grad(gw, normalized(double(xr[i]), mu, rs), a, c, rs));
    }
  }
}

// x̂ of (row, column), for the parameter column sums.
template <class T> struct CentredXhat {
  const T* x;
  const double *mean, *rstd;
  int64_t N;
  __device__ double operator()(int64_t r, int64_t j) const {
    return normalized(double(x[r * N + j]), mean[r], rstd[r]);
  }
};

void layer_norm_backward_cuda(const Tensor& dx, const Tensor& dw, const Tensor& db, const Tensor& g_in,
                              const Tensor& x_in, const Tensor& mean, const Tensor& rstd, const Tensor& w_in) {
  const BackwardInputs in = backward_inputs(dw, db, g_in, x_in, mean, w_in);
  if (in.empty) return;
  const Tensor &g = in.g, &x = in.x, &w = in.w;
  const int64_t M = in.M, N = in.N;
  const int dev = g.device().index;
  dispatch_floating(g.dtype(), "layer_norm backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const cudaStream_t s = stream(dev);
    DeviceGuard guard(g.device());
    const T* xp = x.defined() ? x.data<T>() : nullptr;
    if (dx.defined()) {
      const T* wp = w.defined() ? w.data<T>() : nullptr;
      const RowLaunch L = row_launch(M, N, dev);
      with_row_width(L, [&](auto tpr) {
        backward_dx_rows<T, decltype(tpr)::value><<<L.grid, kThreads, 0, s>>>(
            dx.data<T>(), g.data<T>(), xp, mean.data<double>(), rstd.data<double>(), wp, M, N);
      });
      KS_CUDA_LAUNCH_CHECK();
    }
    norm_columns::column_sums<T>(dw, db, g.data<T>(), CentredXhat<T>{xp, mean.data<double>(), rstd.data<double>(), N},
                                 M, N, dev, s);
  });
}

}  // namespace
KS_REGISTER_KERNEL(layer_norm_kernel, CUDA, through_float32::layer_norm<layer_norm_cuda>);
KS_REGISTER_KERNEL(layer_norm_backward_kernel, CUDA, through_float32::layer_norm_backward<layer_norm_backward_cuda>);
}  // namespace ks::cuda
