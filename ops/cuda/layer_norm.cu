// ops/cuda/layer_norm.cu — fused CUDA kernels for layer_norm, forward and
// backward, with the numerics of ops/cpu/layer_norm.cpp.
//
// Rows (M of them, N elements each) are contiguous after the entry copy. The
// forward gives each row a warp (N <= 1024) or a block: mean, then the
// centred variance (two passes, in double), then y; mean and rstd are saved
// in float64. The backward's dx is the same row pattern. dweight and dbias
// are column sums over rows: rows are cut into chunks fixed by M alone, each
// (chunk, column) thread sums its rows in order into a double partial, and a
// second kernel adds the partials in chunk order — deterministic, no atomics.
#include <type_traits>

#include "core/copy.h"
#include "ops/cuda/block_reduce.cuh"
#include "ops/layer_norm.h"
#include "ops/layer_norm_formulas.h"

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
    auto launch = [&](auto tpr) {
      with_affine(wp != nullptr, bp != nullptr, [&](auto has_w, auto has_b) {
        forward_rows<T, decltype(tpr)::value, decltype(has_w)::value, decltype(has_b)::value>
            <<<L.grid, kThreads, 0, s>>>(y.data<T>(), mean.data<double>(), rstd.data<double>(), x.data<T>(), wp, bp, M,
                                         N, eps);
      });
    };
    if (L.warp_rows)
      launch(std::integral_constant<int, kWarp>{});
    else
      launch(std::integral_constant<int, kThreads>{});
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

// partial_w/b[chunk * N + j] = Σ over the chunk's rows of g·x̂ and g, column j.
template <class T>
__global__ void param_partials(double* pw, double* pb, const T* g, const T* x, const double* mean, const double* rstd,
                               int64_t M, int64_t N, int64_t rows_per_chunk) {
  const int64_t chunk = blockIdx.y;
  const int64_t r0 = chunk * rows_per_chunk, r1 = r0 + rows_per_chunk < M ? r0 + rows_per_chunk : M;
  for (int64_t j : grid_stride(N)) {
    double aw = 0, ab = 0;
    for (int64_t r = r0; r < r1; ++r) {
      const double gv = double(g[r * N + j]);
      if (pw) aw += gv * normalized(double(x[r * N + j]), mean[r], rstd[r]);
      ab += gv;
    }
    if (pw) pw[chunk * N + j] = aw;
    if (pb) pb[chunk * N + j] = ab;
  }
}

template <class T> __global__ void sum_partials(T* out, const double* part, int64_t chunks, int64_t N) {
  for (int64_t j : grid_stride(N)) {
    double s = 0;
    for (int64_t c = 0; c < chunks; ++c) s += part[c * N + j];
    out[j] = T(s);
  }
}

void layer_norm_backward_cuda(const Tensor& dx, const Tensor& dw, const Tensor& db, const Tensor& g_in,
                              const Tensor& x_in, const Tensor& mean, const Tensor& rstd, const Tensor& w_in) {
  const BackwardInputs in = backward_inputs(dw, db, g_in, x_in, mean, w_in);
  if (in.empty) return;
  const Tensor &g = in.g, &x = in.x, &w = in.w;
  const int64_t M = in.M, N = in.N;
  const int dev = g.device().index;
  // Chunks of rows for the parameter partials: a function of M alone.
  const int64_t rows_per_chunk = std::max<int64_t>(16, (M + 255) / 256);
  const int64_t chunks = (M + rows_per_chunk - 1) / rows_per_chunk;
  dispatch_floating(g.dtype(), "layer_norm backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const cudaStream_t s = stream(dev);
    DeviceGuard guard(g.device());
    const T* xp = x.defined() ? x.data<T>() : nullptr;
    if (dx.defined()) {
      const T* wp = w.defined() ? w.data<T>() : nullptr;
      const RowLaunch L = row_launch(M, N, dev);
      if (L.warp_rows)
        backward_dx_rows<T, kWarp><<<L.grid, kThreads, 0, s>>>(dx.data<T>(), g.data<T>(), xp, mean.data<double>(),
                                                               rstd.data<double>(), wp, M, N);
      else
        backward_dx_rows<T, kThreads><<<L.grid, kThreads, 0, s>>>(dx.data<T>(), g.data<T>(), xp, mean.data<double>(),
                                                                  rstd.data<double>(), wp, M, N);
      KS_CUDA_LAUNCH_CHECK();
    }
    if (!dw.defined() && !db.defined()) return;
    Tensor pw = dw.defined() ? Tensor::empty({chunks, N}, kFloat64, g.device()) : Tensor();
    Tensor pb = db.defined() ? Tensor::empty({chunks, N}, kFloat64, g.device()) : Tensor();
    const dim3 grid(unsigned(std::min<int64_t>((N + kThreads - 1) / kThreads, 65535)), unsigned(chunks));
    param_partials<T><<<grid, kThreads, 0, s>>>(pw.defined() ? pw.data<double>() : nullptr,
                                                pb.defined() ? pb.data<double>() : nullptr, g.data<T>(), xp,
                                                mean.data<double>(), rstd.data<double>(), M, N, rows_per_chunk);
    KS_CUDA_LAUNCH_CHECK();
    const unsigned cols_grid = grid_for(N, kThreads, dev);
    if (dw.defined()) {
      sum_partials<T><<<cols_grid, kThreads, 0, s>>>(dw.data<T>(), pw.data<double>(), chunks, N);
      KS_CUDA_LAUNCH_CHECK();
    }
    if (db.defined()) {
      sum_partials<T><<<cols_grid, kThreads, 0, s>>>(db.data<T>(), pb.data<double>(), chunks, N);
      KS_CUDA_LAUNCH_CHECK();
    }
  });
}

}  // namespace
KS_REGISTER_KERNEL(layer_norm_kernel, CUDA, layer_norm_cuda);
KS_REGISTER_KERNEL(layer_norm_backward_kernel, CUDA, layer_norm_backward_cuda);
}  // namespace ks::cuda
