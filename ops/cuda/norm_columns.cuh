// ops/cuda/norm_columns.cuh — the column sums the CUDA normalisation
// backwards share (cuda/layer_norm.cu, cuda/rms_norm.cu): dweight = Σ_rows g·x̂
// and dbias = Σ_rows g, deterministic and without atomics.
//
// Rows are cut into chunks fixed by M alone; each (chunk, column) thread sums
// its chunk's rows in order into a double partial, and a second kernel adds
// the partials in chunk order. x̂ of (row, column) is the caller's functor
// (layer_norm: (x − mean)·rstd; rms_norm: x·rstd). Not here: dx (each op's own).
#pragma once

#include <algorithm>

#include "ops/cuda/block_reduce.cuh"

namespace ks::cuda::norm_columns {

// partial_w/b[chunk * N + j] = Σ over the chunk's rows of g·x̂ and g, column j.
template <class T, class XHat>
__global__ void param_partials(double* pw, double* pb, const T* g, XHat xhat, int64_t M, int64_t N,
                               int64_t rows_per_chunk) {
  const int64_t chunk = blockIdx.y;
  const int64_t r0 = chunk * rows_per_chunk, r1 = r0 + rows_per_chunk < M ? r0 + rows_per_chunk : M;
  for (int64_t j : grid_stride(N)) {
    double aw = 0, ab = 0;
    for (int64_t r = r0; r < r1; ++r) {
      const double gv = double(g[r * N + j]);
      if (pw) aw += gv * xhat(r, j);
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

// Writes dw and db (N, contiguous; each may be undefined) from g (M, N)
// contiguous on `s`; xhat(r, j) is a __device__ functor, read only for dw.
template <class T, class XHat>
void column_sums(const Tensor& dw, const Tensor& db, const T* g, XHat xhat, int64_t M, int64_t N, int dev,
                 cudaStream_t s) {
  if (!dw.defined() && !db.defined()) return;
  // Chunks of rows for the parameter partials: a function of M alone.
  const int64_t rows_per_chunk = std::max<int64_t>(16, (M + 255) / 256);
  const int64_t chunks = (M + rows_per_chunk - 1) / rows_per_chunk;
  const Device device = dw.defined() ? dw.device() : db.device();
  Tensor pw = dw.defined() ? Tensor::empty({chunks, N}, kFloat64, device) : Tensor();
  Tensor pb = db.defined() ? Tensor::empty({chunks, N}, kFloat64, device) : Tensor();
  const dim3 grid(unsigned(std::min<int64_t>((N + kThreads - 1) / kThreads, 65535)), unsigned(chunks));
  param_partials<T><<<grid, kThreads, 0, s>>>(pw.defined() ? pw.data<double>() : nullptr,
                                              pb.defined() ? pb.data<double>() : nullptr, g, xhat, M, N,
                                              rows_per_chunk);
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
}

}  // namespace ks::cuda::norm_columns
