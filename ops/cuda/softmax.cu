// ops/cuda/softmax.cu — fused CUDA kernels for softmax / log_softmax,
// forward and backward, with the numerics of ops/cpu/softmax.cpp.
//
// Inputs are made contiguous and seen as (outer, n, inner) around the dim.
// inner == 1 (the last dim): one warp per row for rows up to 1024, else one
// block per row; the row's max, Σexp and Σg·y are combined across the
// threads (block_reduce.cuh), accumulated in double. inner > 1: one thread
// per (outer, inner) column walking the dim, so neighbouring threads read
// neighbouring memory. A fully masked row (all -inf) uses max 0, so every
// exp is 0: softmax gives zeros and log_softmax -inf, with zero gradient.
// bfloat16 and float16 run through float32 (ops/through_float32.h), as on
// the CPU.
#include <cmath>

#include "core/copy.h"
#include "ops/cuda/block_reduce.cuh"
#include "ops/softmax.h"
#include "ops/softmax_formulas.h"
#include "ops/through_float32.h"

namespace ks::cuda {
namespace {

using namespace softmax_formulas;

template <class T, bool Log, int TPR> __global__ void forward_rows(T* y, const T* x, int64_t rows, int64_t n) {
  const int lane = row_lane<TPR>();
  for (int64_t r = first_row<TPR>(); r < rows; r += row_stride<TPR>()) {
    const T* xr = x + r * n;
    T* yr = y + r * n;
    T m = T(-INFINITY);
    for (int64_t i = lane; i < n; i += TPR) m = xr[i] > m ? xr[i] : m;
    m = row_shift(row_max<TPR>(m));
    double s = 0;
    for (int64_t i = lane; i < n; i += TPR) s += double(kmath::exp(xr[i] - m));
    const T norm = row_norm<T, Log>(row_sum<TPR>(s));
    for (int64_t i = lane; i < n; i += TPR) yr[i] = softmax_out<T, Log>(xr[i], m, norm);
  }
}

template <class T, bool Log> __global__ void forward_columns(T* y, const T* x, Geometry G) {
  const int64_t cols = G.outer * G.inner;
  for (int64_t c : grid_stride(cols)) {
    const int64_t o = c / G.inner, j = c - o * G.inner;
    const T* xc = x + o * G.n * G.inner + j;
    T* yc = y + o * G.n * G.inner + j;
    T m = T(-INFINITY);
    for (int64_t k = 0; k < G.n; ++k) m = xc[k * G.inner] > m ? xc[k * G.inner] : m;
    m = row_shift(m);
    double s = 0;
    for (int64_t k = 0; k < G.n; ++k) s += double(kmath::exp(xc[k * G.inner] - m));
    const T norm = row_norm<T, Log>(s);
    for (int64_t k = 0; k < G.n; ++k) yc[k * G.inner] = softmax_out<T, Log>(xc[k * G.inner], m, norm);
  }
}

template <class T, bool Log, int TPR>
__global__ void backward_rows(T* dx, const T* g, const T* y, int64_t rows, int64_t n) {
  const int lane = row_lane<TPR>();
  for (int64_t r = first_row<TPR>(); r < rows; r += row_stride<TPR>()) {
    const T* gr = g + r * n;
    const T* yr = y + r * n;
    T* dr = dx + r * n;
    if constexpr (Log) {
      // A row of -inf outputs came from a fully masked row: its gradient is 0.
      double sg = 0, live = 0;
      for (int64_t i = lane; i < n; i += TPR) {
        sg += double(gr[i]);
        live += yr[i] != T(-INFINITY) ? 1.0 : 0.0;
      }
      sg = row_sum<TPR>(sg);
      live = row_sum<TPR>(live);
      const T a = T(sg);
      for (int64_t i = lane; i < n; i += TPR) dr[i] = live > 0 ? softmax_grad<T, true>(gr[i], yr[i], a) : T(0);
    } else {
      double dot = 0;
      for (int64_t i = lane; i < n; i += TPR) dot += double(gr[i]) * double(yr[i]);
      const T a = T(row_sum<TPR>(dot));
      for (int64_t i = lane; i < n; i += TPR) dr[i] = softmax_grad<T, false>(gr[i], yr[i], a);
    }
  }
}

template <class T, bool Log> __global__ void backward_columns(T* dx, const T* g, const T* y, Geometry G) {
  const int64_t cols = G.outer * G.inner;
  for (int64_t c : grid_stride(cols)) {
    const int64_t o = c / G.inner, j = c - o * G.inner;
    const int64_t base = o * G.n * G.inner + j;
    double acc = 0;
    bool live = false;
    for (int64_t k = 0; k < G.n; ++k) {
      const int64_t e = base + k * G.inner;
      if constexpr (Log) {
        acc += double(g[e]);
        live = live || y[e] != T(-INFINITY);
      } else {
        acc += double(g[e]) * double(y[e]);
      }
    }
    const T a = T(acc);
    for (int64_t k = 0; k < G.n; ++k) {
      const int64_t e = base + k * G.inner;
      dx[e] = (!Log || live) ? softmax_grad<T, Log>(g[e], y[e], a) : T(0);
    }
  }
}

template <class T, bool Log> void run_forward(const Tensor& out, const Tensor& x, const Geometry& G) {
  const int dev = x.device().index;
  const cudaStream_t s = stream(dev);
  DeviceGuard guard(x.device());
  T* yp = out.data<T>();
  const T* xp = x.data<T>();
  if (G.inner == 1) {
    const RowLaunch L = row_launch(G.outer, G.n, dev);
    with_row_width(L, [&](auto tpr) {
      forward_rows<T, Log, decltype(tpr)::value><<<L.grid, kThreads, 0, s>>>(yp, xp, G.outer, G.n);
    });
  } else {
    forward_columns<T, Log><<<grid_for(G.outer * G.inner, kThreads, dev), kThreads, 0, s>>>(yp, xp, G);
  }
  KS_CUDA_LAUNCH_CHECK();
}

template <class T, bool Log> void run_backward(const Tensor& dx, const Tensor& g, const Tensor& y, const Geometry& G) {
  const int dev = y.device().index;
  const cudaStream_t s = stream(dev);
  DeviceGuard guard(y.device());
  T* dp = dx.data<T>();
  const T* gp = g.data<T>();
  const T* yp = y.data<T>();
  if (G.inner == 1) {
    const RowLaunch L = row_launch(G.outer, G.n, dev);
    with_row_width(L, [&](auto tpr) {
      backward_rows<T, Log, decltype(tpr)::value><<<L.grid, kThreads, 0, s>>>(dp, gp, yp, G.outer, G.n);
    });
  } else {
    backward_columns<T, Log><<<grid_for(G.outer * G.inner, kThreads, dev), kThreads, 0, s>>>(dp, gp, yp, G);
  }
  KS_CUDA_LAUNCH_CHECK();
}

void softmax_cuda(bool log, const Tensor& out, const Tensor& x_in, int64_t dim) {
  forward_entry(out, x_in, dim, log, [&](auto tag, auto is_log, const Tensor& x, const Geometry& G) {
    using T = typename decltype(tag)::type;
    run_forward<T, decltype(is_log)::value>(out, x, G);
  });
}

void softmax_backward_cuda(bool log, const Tensor& dx, const Tensor& g_in, const Tensor& y_in, int64_t dim) {
  backward_entry(dx, g_in, y_in, dim, log,
                 [&](auto tag, auto is_log, const Tensor& g, const Tensor& y, const Geometry& G) {
                   using T = typename decltype(tag)::type;
                   run_backward<T, decltype(is_log)::value>(dx, g, y, G);
                 });
}

}  // namespace
KS_REGISTER_KERNEL(softmax_kernel, CUDA, through_float32::softmax<softmax_cuda>);
KS_REGISTER_KERNEL(softmax_backward_kernel, CUDA, through_float32::softmax_backward<softmax_backward_cuda>);
}  // namespace ks::cuda
