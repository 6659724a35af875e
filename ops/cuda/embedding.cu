// ops/cuda/embedding.cu — CUDA kernels for embedding: the row gather and the
// scatter-add backward, in a deterministic and an atomic form.
//
// Forward: indices are checked on the device (the first invalid position
// comes back to the host, one small synchronous copy, so the error names the
// same index as the CPU's), then one thread per output element copies its
// weight element (any dtype, any weight strides).
//
// Backward, deterministic (the default, cuda_deterministic()): positions are
// sorted by index with a stable radix sort (CUB), so each weight row's
// positions are contiguous and in increasing order; one thread per
// (row, column) then sums its positions in that order, in double for float32
// — the CPU kernel's order and precision, hence the CPU's result bit for bit.
// Atomic (cuda_set_deterministic(false)): dweight is zeroed and every
// gradient element is atomically added into its row; faster, but the order
// of float additions, and so the last bits, vary between runs.
// The row padding_idx always gets zero gradient. bfloat16 and float16
// gradients are summed in a float32 stand-in the same way and rounded once
// (ops/through_float32.h), the CPU's result in the deterministic form.
#include <cub/device/device_radix_sort.cuh>

#include <climits>

#include "core/copy.h"
#include "core/cuda.h"
#include "core/cuda/loops.cuh"
#include "core/factory.h"
#include "ops/embedding.h"
#include "ops/through_float32.h"

namespace ks::cuda {
namespace {

// first_bad = the smallest position whose index is outside [0, V) (n if none).
__global__ void check_indices_kernel(const int64_t* idx, int64_t n, int64_t V, unsigned long long* first_bad) {
  unsigned long long mine = (unsigned long long)n;
  for (int64_t i : grid_stride(n))
    if ((idx[i] < 0 || idx[i] >= V) && (unsigned long long)i < mine) mine = (unsigned long long)i;
  if (mine < (unsigned long long)n) atomicMin(first_bad, mine);
}

template <class T>
__global__ void gather_rows(T* out, const T* w, const int64_t* idx, int64_t n, int64_t D, int64_t s0, int64_t s1) {
  const int64_t total = n * D;
  for (int64_t e : grid_stride(total)) {
    const int64_t i = e / D, d = e - i * D;
    out[e] = w[idx[i] * s0 + d * s1];
  }
}

void embedding_cuda(const Tensor& out, const Tensor& weight, const Tensor& indices_in) {
  const Tensor indices = contiguous_raw(indices_in);
  const int64_t n = indices.numel(), V = weight.size(0), D = weight.size(1);
  if (n == 0) return;
  const Device dev = weight.device();
  const cudaStream_t s = stream(dev);
  {
    Tensor bad = full({}, double(n), {.dtype = kInt64, .device = dev});
    DeviceGuard guard(dev);
    check_indices_kernel<<<grid_for(n, kThreads, dev.index), kThreads, 0, s>>>(
        indices.data<int64_t>(), n, V, static_cast<unsigned long long*>(bad.data_ptr()));
    KS_CUDA_LAUNCH_CHECK();
    const int64_t first = bad.item<int64_t>();  // synchronises the stream
    if (first < n) {
      const int64_t value = indices.alias({}, {}, indices.storage_offset() + first).item<int64_t>();
      throw Error(
          str("embedding: index ", value, " is out of range for ", V, " embeddings (weight ", describe(weight), ")"));
    }
  }
  if (D == 0) return;
  dispatch_storage(weight.dtype(), "embedding", [&](auto tag) {
    using T = typename decltype(tag)::type;
    DeviceGuard guard(dev);
    gather_rows<T><<<grid_for(n * D, kThreads, dev.index), kThreads, 0, s>>>(
        static_cast<T*>(out.data_ptr()), static_cast<const T*>(weight.data_ptr()), indices.data<int64_t>(), n, D,
        weight.stride(0), weight.stride(1));
    KS_CUDA_LAUNCH_CHECK();
  });
}

__global__ void iota_kernel(int64_t* out, int64_t n) {
  for (int64_t i : grid_stride(n)) out[i] = i;
}

// begin[v], end[v]: the range of sorted positions whose index is v (both 0 if none).
__global__ void segment_bounds(const int64_t* keys, int64_t n, int64_t* begin, int64_t* end) {
  for (int64_t i : grid_stride(n)) {
    if (i == 0 || keys[i] != keys[i - 1]) begin[keys[i]] = i;
    if (i == n - 1 || keys[i] != keys[i + 1]) end[keys[i]] = i + 1;
  }
}

template <class T>
__global__ void sum_segments(T* dw, const T* g, const int64_t* order, const int64_t* begin, const int64_t* end,
                             int64_t V, int64_t D, int64_t padding_idx) {
  using Acc = std::conditional_t<std::is_same_v<T, float>, double, T>;
  const int64_t total = V * D;
  for (int64_t e : grid_stride(total)) {
    const int64_t v = e / D, d = e - v * D;
    Acc acc = 0;
    if (v != padding_idx)
      for (int64_t k = begin[v]; k < end[v]; ++k) acc += Acc(g[order[k] * D + d]);
    dw[e] = T(acc);
  }
}

template <class T>
__global__ void scatter_add_rows(T* dw, const T* g, const int64_t* idx, int64_t n, int64_t D, int64_t padding_idx) {
  const int64_t total = n * D;
  for (int64_t e : grid_stride(total)) {
    const int64_t i = e / D, d = e - i * D;
    if (idx[i] != padding_idx) atomicAdd(&dw[idx[i] * D + d], g[e]);
  }
}

// Number of bits that hold every index in [0, V).
int key_bits(int64_t V) {
  int bits = 1;
  while (bits < 63 && (int64_t(1) << bits) < V) ++bits;
  return bits;
}

template <class T>
void embedding_backward_typed(const Tensor& dw, const Tensor& g, const Tensor& indices, int64_t padding_idx) {
  const int64_t n = indices.numel(), V = dw.size(0), D = dw.size(1);
  const Device dev = dw.device();
  const cudaStream_t s = stream(dev);
  if (n == 0 || D == 0 || !cuda_deterministic()) {
    fill_(dw, 0.0);
    if (n == 0 || D == 0) return;
    DeviceGuard guard(dev);
    scatter_add_rows<T><<<grid_for(n * D, kThreads, dev.index), kThreads, 0, s>>>(
        dw.data<T>(), g.data<T>(), indices.data<int64_t>(), n, D, padding_idx);
    KS_CUDA_LAUNCH_CHECK();
    return;
  }
  KS_CHECK(n <= INT_MAX, "embedding backward: ", n, " indices exceed the sort's 32-bit count");
  const TensorOptions on_dev{.dtype = kInt64, .device = dev};
  Tensor positions = empty({n}, on_dev), sorted_keys = empty({n}, on_dev), order = empty({n}, on_dev);
  Tensor begin = zeros({V}, on_dev), end = zeros({V}, on_dev);
  DeviceGuard guard(dev);
  iota_kernel<<<grid_for(n, kThreads, dev.index), kThreads, 0, s>>>(positions.data<int64_t>(), n);
  KS_CUDA_LAUNCH_CHECK();
  size_t temp_bytes = 0;
  KS_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, indices.data<int64_t>(),
                                                sorted_keys.data<int64_t>(), positions.data<int64_t>(),
                                                order.data<int64_t>(), int(n), 0, key_bits(V), s));
  Tensor temp = empty({int64_t(temp_bytes)}, {.dtype = kBool, .device = dev});
  KS_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp.data_ptr(), temp_bytes, indices.data<int64_t>(),
                                                sorted_keys.data<int64_t>(), positions.data<int64_t>(),
                                                order.data<int64_t>(), int(n), 0, key_bits(V), s));
  segment_bounds<<<grid_for(n, kThreads, dev.index), kThreads, 0, s>>>(sorted_keys.data<int64_t>(), n,
                                                                       begin.data<int64_t>(), end.data<int64_t>());
  KS_CUDA_LAUNCH_CHECK();
  sum_segments<T><<<grid_for(V * D, kThreads, dev.index), kThreads, 0, s>>>(
      dw.data<T>(), g.data<T>(), order.data<int64_t>(), begin.data<int64_t>(), end.data<int64_t>(), V, D, padding_idx);
  KS_CUDA_LAUNCH_CHECK();
}

void embedding_backward_cuda(const Tensor& dw, const Tensor& g_in, const Tensor& indices_in, int64_t padding_idx) {
  if (is_16bit(dw)) {  // summed in float32's way (double, or float32 atomics), rounded once (ops/through_float32.h)
    const Float32Out d(dw);
    embedding_backward_cuda(d.f32, as_float32(g_in), indices_in, padding_idx);
    return d.store();
  }
  const Tensor g = contiguous_raw(g_in), indices = contiguous_raw(indices_in);
  dispatch_floating(dw.dtype(), "embedding backward", [&](auto tag) {
    embedding_backward_typed<typename decltype(tag)::type>(dw, g, indices, padding_idx);
  });
}

}  // namespace
KS_REGISTER_KERNEL(embedding_kernel, CUDA, embedding_cuda);
KS_REGISTER_KERNEL(embedding_backward_kernel, CUDA, embedding_backward_cuda);
}  // namespace ks::cuda
