// ops/cuda/block_reduce.cuh — sums and maxima across the threads that share
// one row, for the fused row kernels (softmax, layer_norm, losses), and a
// deterministic sum of a whole array.
//
// A row is handled by TPR threads: one warp (TPR = 32, for rows up to
// kWarpRowMax elements, several rows per block) or one whole block (TPR =
// kThreads). row_sum/row_max combine the TPR threads' values with warp
// shuffles and, for a block, one round through shared memory; every thread
// of the row gets the result. The order of combination is fixed by TPR
// alone, so results are deterministic. Not a general reduction (reduce.cu).
#pragma once

#include <type_traits>

#include "core/cuda/loops.cuh"

namespace ks::cuda {

constexpr int kWarp = 32;
constexpr int64_t kWarpRowMax = 1024;  // rows up to this long get one warp each

template <class V> __device__ inline V warp_sum(V v) {
  for (int o = kWarp / 2; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
template <class V> __device__ inline V warp_max(V v) {
  for (int o = kWarp / 2; o > 0; o /= 2) {
    const V w = __shfl_xor_sync(0xffffffffu, v, o);
    v = w > v ? w : v;
  }
  return v;
}

// Σ v over the TPR threads of this row. Every thread of the block must call it.
template <int TPR, class V> __device__ inline V row_sum(V v) {
  v = warp_sum(v);
  if constexpr (TPR == kWarp) {
    return v;
  } else {
    static_assert(TPR == kThreads, "a row is one warp or one block");
    __shared__ V part[kThreads / kWarp];
    const int lane = int(threadIdx.x) % kWarp, warp = int(threadIdx.x) / kWarp;
    __syncthreads();  // part may still be read by a previous call
    if (lane == 0) part[warp] = v;
    __syncthreads();
    V total = part[0];
    for (int w = 1; w < kThreads / kWarp; ++w) total += part[w];
    return total;
  }
}

// max v over the TPR threads of this row (NaN-unaware: callers let a NaN
// reach their result through a sum).
template <int TPR, class V> __device__ inline V row_max(V v) {
  v = warp_max(v);
  if constexpr (TPR == kWarp) {
    return v;
  } else {
    static_assert(TPR == kThreads, "a row is one warp or one block");
    __shared__ V part[kThreads / kWarp];
    const int lane = int(threadIdx.x) % kWarp, warp = int(threadIdx.x) / kWarp;
    __syncthreads();
    if (lane == 0) part[warp] = v;
    __syncthreads();
    V m = part[0];
    for (int w = 1; w < kThreads / kWarp; ++w) m = part[w] > m ? part[w] : m;
    return m;
  }
}

// Launch shape for `rows` rows of length n: TPR threads per row, grid of blocks.
struct RowLaunch {
  bool warp_rows;  // TPR = 32 (else TPR = kThreads)
  unsigned grid;
};
inline RowLaunch row_launch(int64_t rows, int64_t n, int device) {
  const bool warp_rows = n <= kWarpRowMax;
  const int64_t rows_per_block = warp_rows ? kThreads / kWarp : 1;
  const int64_t blocks = (rows + rows_per_block - 1) / rows_per_block;
  const int64_t cap = int64_t(multiprocessors(device)) * (2048 / kThreads) * 4;
  return {warp_rows, unsigned(std::max<int64_t>(1, std::min(blocks, cap)))};
}

// Calls launch(tpr) with tpr a std::integral_constant<int, TPR> of the row
// width row_launch chose, so a kernel templated on TPR is written once.
template <class Launch> void with_row_width(const RowLaunch& L, Launch&& launch) {
  if (L.warp_rows)
    launch(std::integral_constant<int, kWarp>{});
  else
    launch(std::integral_constant<int, kThreads>{});
}

// The row this thread works on first, and the stride to its next row, for TPR threads per row.
template <int TPR> __device__ inline int64_t first_row() {
  return (int64_t(blockIdx.x) * kThreads + threadIdx.x) / TPR;
}
template <int TPR> __device__ inline int64_t row_stride() { return int64_t(gridDim.x) * kThreads / TPR; }
template <int TPR> __device__ inline int row_lane() { return int(threadIdx.x) % TPR; }

// Partial sums of f(i) over [0, n): block b sums the indices i ≡ its threads
// (mod the grid), in a fixed order; the grid size depends on n only.
template <class F> __global__ void partial_sums_kernel(int64_t n, F f, double* partial) {
  double acc = 0;
  for (int64_t i : grid_stride(n)) acc += f(i);
  acc = row_sum<kThreads>(acc);
  if (threadIdx.x == 0) partial[blockIdx.x] = acc;
}

template <class Fin> __global__ void finish_sum_kernel(const double* partial, int count, Fin fin) {
  if (threadIdx.x == 0 && blockIdx.x == 0) {
    double total = 0;
    for (int b = 0; b < count; ++b) total += partial[b];
    fin(total);
  }
}

// Σ_i f(i) for i in [0, n) as a double, then fin(total) on the device, on
// `device`'s stream. f and fin are __device__ functors.
template <class F, class Fin> void sum_all(Device device, int64_t n, F f, Fin fin) {
  const int64_t blocks = std::max<int64_t>(1, std::min<int64_t>((n + 4 * kThreads - 1) / (4 * kThreads), 1024));
  Tensor partial = Tensor::empty({blocks}, kFloat64, device);
  const cudaStream_t s = stream(device);
  DeviceGuard guard(device);
  partial_sums_kernel<<<unsigned(blocks), kThreads, 0, s>>>(n, f, partial.data<double>());
  KS_CUDA_LAUNCH_CHECK();
  finish_sum_kernel<<<1, 1, 0, s>>>(partial.data<double>(), int(blocks), fin);
  KS_CUDA_LAUNCH_CHECK();
}

}  // namespace ks::cuda
