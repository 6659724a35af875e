// core/cuda/loops.cuh — the elementwise launch under every CUDA kernel that
// maps tensors element by element (copies, fills, binary/unary ops, masks).
// dtype conversions on the device are core/dtype.h's (convert, BFloat16,
// Float16), compiled for both sides.
//
//   cuda_map<Out, In...>(f, out, {in...});   // out[i] = f(in_0[i], ...), f a __device__ functor
//
// All operands have out's shape (inputs may be strided, permuted or
// broadcast views). Dims are first coalesced on the host exactly as the CPU
// loop does (core/strided_loop.h). If every operand is then one contiguous
// run, a flat kernel indexes the arrays directly; otherwise each thread turns
// its linear (row-major) index into per-operand byte offsets, with 32-bit
// index arithmetic when the element count fits (64-bit division is slow on
// the GPU). Either way a grid-stride loop covers any int64 element count.
// Launches go to the device's stream and are checked. nvcc only (.cu files);
// this is not where reductions live (ops/cuda/reduce.cu).
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>

#include "core/cuda/cuda_check.h"
#include "core/cuda/runtime.h"
#include "core/dtype.h"
#include "core/strided_loop.h"
#include "core/tensor.h"

namespace ks::cuda {

// --- geometry ---
constexpr int kMaxDims = 12;
constexpr int kThreads = 256;

// The indices [0, n) this thread visits in a grid-stride loop (any grid
// covers any n):  for (int64_t i : grid_stride(n)) out[i] = ...;
// Index is the arithmetic's type, int64_t unless named (uint32_t where n
// fits: faster division); it is never deduced from n, so an int count still
// steps in int64_t.
template <class Index> struct GridStride {
  Index first, n, step;
  struct Iter {
    Index i, step;
    __device__ Index operator*() const { return i; }
    __device__ Iter& operator++() {
      i += step;
      return *this;
    }
    __device__ bool operator!=(Index end) const { return i < end; }
  };
  __device__ Iter begin() const { return {first, step}; }
  __device__ Index end() const { return n; }
};

template <class Index = int64_t> __device__ inline GridStride<Index> grid_stride(std::type_identity_t<Index> n) {
  return {Index(blockIdx.x) * blockDim.x + threadIdx.x, n, Index(gridDim.x) * blockDim.x};
}

// Linear index -> byte offset of each of N operands, over coalesced dims.
template <int N> struct OffsetCalc {
  int ndim = 0;
  int64_t sizes[kMaxDims];       // innermost first
  int64_t strides[kMaxDims][N];  // bytes, innermost first

  template <class Index> __device__ void offsets(Index i, int64_t (&off)[N]) const {
    for (int k = 0; k < N; ++k) off[k] = 0;
    for (int d = 0; d < ndim; ++d) {
      const Index size = Index(sizes[d]);
      const Index q = i / size;
      const int64_t idx = int64_t(i - q * size);
      i = q;
      for (int k = 0; k < N; ++k) off[k] += idx * strides[d][k];
    }
  }
};

template <int N> struct Pointers { char* p[N]; };

// The coalesced layout of n operands over `sizes`; true if every operand is
// one contiguous run of its own element size.
template <int N>
bool make_offset_calc(const Shape& sizes, const std::array<Shape, N>& elem_strides,
                      const std::array<size_t, N>& itemsizes, OffsetCalc<N>& oc) {
  const StridedLayout<N> L = make_strided_layout<N>(sizes, elem_strides, itemsizes);
  const int nd = int(L.sizes.size());
  KS_CHECK(nd <= kMaxDims, "cuda: tensors with more than ", kMaxDims, " non-mergeable dims are not supported (", sizes,
           ")");
  oc.ndim = nd;
  for (int d = 0; d < nd; ++d) {
    oc.sizes[d] = L.sizes[size_t(nd - 1 - d)];
    for (int k = 0; k < N; ++k) oc.strides[d][k] = L.strides[k][size_t(nd - 1 - d)];
  }
  bool contiguous = nd == 1;
  for (int k = 0; k < N && contiguous; ++k) contiguous = L.strides[k][0] == int64_t(itemsizes[k]);
  return contiguous;
}

template <class F, class Out, class... In, size_t... I>
__device__ inline void apply_at(F& f, const Pointers<sizeof...(In) + 1>& ptr, const int64_t* off,
                                std::index_sequence<I...>) {
  *reinterpret_cast<Out*>(ptr.p[0] + off[0]) = f(*reinterpret_cast<const In*>(ptr.p[I + 1] + off[I + 1])...);
}

template <class F, class Out, class... In>
__global__ void map_contiguous_kernel(int64_t n, F f, Out* out, const In*... in) {
  for (int64_t i : grid_stride(n)) out[i] = f(in[i]...);
}

template <class Index, class F, class Out, class... In>
__global__ void map_strided_kernel(Index n, F f, OffsetCalc<sizeof...(In) + 1> oc, Pointers<sizeof...(In) + 1> ptr) {
  constexpr int N = sizeof...(In) + 1;
  for (Index i : grid_stride<Index>(n)) {
    int64_t off[N];
    oc.offsets(i, off);
    apply_at<F, Out, In...>(f, ptr, off, std::index_sequence_for<In...>{});
  }
}

// out[i] = f(in[i]...) on out's device; Out and In are the element types.
template <class Out, class... In, class F>
void cuda_map(F f, const Tensor& out, const std::array<Tensor, sizeof...(In)>& in) {
  constexpr int K = sizeof...(In);
  constexpr int N = K + 1;
  const int64_t n = out.numel();
  if (n == 0) return;
  const int dev = out.device().index;
  std::array<Shape, N> strides;
  std::array<size_t, N> sizes;
  Pointers<N> ptr;
  strides[0] = out.strides();
  sizes[0] = sizeof(Out);
  ptr.p[0] = static_cast<char*>(out.data_ptr());
  for (int k = 0; k < K; ++k) {
    KS_ASSERT(in[size_t(k)].sizes() == out.sizes() && in[size_t(k)].device() == out.device());
    strides[size_t(k + 1)] = in[size_t(k)].strides();
    sizes[size_t(k + 1)] = in[size_t(k)].element_size();
    ptr.p[k + 1] = static_cast<char*>(in[size_t(k)].data_ptr());
  }
  OffsetCalc<N> oc;
  const bool contiguous = make_offset_calc<N>(out.sizes(), strides, sizes, oc);
  DeviceGuard guard(out.device());
  const cudaStream_t s = stream(dev);
  const unsigned grid = grid_for(n, kThreads, dev);
  if (contiguous) {
    [&]<size_t... I>(std::index_sequence<I...>) {
      map_contiguous_kernel<F, Out, In...><<<grid, kThreads, 0, s>>>(n, f, reinterpret_cast<Out*>(ptr.p[0]),
                                                                     reinterpret_cast<const In*>(ptr.p[I + 1])...);
    }
    (std::index_sequence_for<In...>{});
  } else if (n <= int64_t(std::numeric_limits<int32_t>::max())) {
    map_strided_kernel<uint32_t, F, Out, In...><<<grid, kThreads, 0, s>>>(uint32_t(n), f, oc, ptr);
  } else {
    map_strided_kernel<int64_t, F, Out, In...><<<grid, kThreads, 0, s>>>(n, f, oc, ptr);
  }
  KS_CUDA_LAUNCH_CHECK();
}

template <class F> __global__ void for_each_index_kernel(int64_t n, F f) {
  for (int64_t i : grid_stride(n)) f(i);
}

// f(i) for every i in [0, n) on `device`, one thread per index: for updates
// that read and write several arrays per element (the optimizer steps), which
// the one-output cuda_map cannot express. f carries its own pointers.
template <class F> void cuda_for_each_index(const Device& device, int64_t n, F f) {
  if (n == 0) return;
  DeviceGuard guard(device);
  for_each_index_kernel<<<grid_for(n, kThreads, device.index), kThreads, 0, stream(device.index)>>>(n, f);
  KS_CUDA_LAUNCH_CHECK();
}

// The GPU's loops as a type, for the kernels written once for every backend
// (ops/*_formulas.h), instantiated as `unary_forward<CudaLoops>`; the same
// interface as ops/cpu/loops.h's CpuLoops, and like it computing bfloat16 and
// float16 in float32 (ops/kernel_dtypes.h):
//   map<Out, In...>(f, out, in)          cuda_map
//   for_each_index(device, n, grain, f)  cuda_for_each_index (one thread per
//                                        index; grain is the CPU's chunking)
struct CudaLoops {
  static constexpr bool computes_16bit = true;
  template <class Out, class... In, class F>
  static void map(F f, const Tensor& out, const std::array<Tensor, sizeof...(In)>& in) {
    cuda_map<Out, In...>(f, out, in);
  }
  template <class F> static void for_each_index(const Device& device, int64_t n, int64_t, F f) {
    cuda_for_each_index(device, n, f);
  }
};

}  // namespace ks::cuda
