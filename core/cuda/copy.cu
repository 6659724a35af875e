// core/cuda/copy.cu — the CUDA kernels of core/copy.h and core/factory.h:
// strided copy with dtype conversion, fill, byte copies between the host and
// devices, and the Philox random fill.
//
// copy_() itself (core/copy.cpp) decides the route: a same-device copy runs
// copy_cuda; a cross-device copy stages contiguous bytes through
// device_memcpy and converts on the destination. Copies to the host
// synchronise the stream (the host reads the bytes next). Copies from
// pageable host memory return once the driver has staged the bytes, so the
// source may be freed at once; copies from pinned memory (pinned_empty) are
// truly asynchronous and mark the pinned block busy until they finish.
// Random fills compute core/random_values.h, the CPU kernel's own recipe.
#include "core/copy.h"
#include "core/cuda/allocator.h"
#include "core/cuda/loops.cuh"
#include "core/factory.h"
#include "core/random_values.h"

namespace ks::cuda {
namespace {

template <class D, class S> void copy_typed(const Tensor& dst, const Tensor& src) {
  cuda_map<D, S>([] __device__(S v) { return convert<D>(v); }, dst, {src});
}

void copy_cuda(const Tensor& dst, const Tensor& src) {
  dispatch_storage(dst.dtype(), "copy", [&](auto dt) {
    using D = typename decltype(dt)::type;
    dispatch_storage(src.dtype(), "copy", [&](auto st) {
      using S = typename decltype(st)::type;
      copy_typed<D, S>(dst, src);
    });
  });
}

template <class T> void fill_typed(const Tensor& t, T v) {
  cuda_map<T>([v] __device__() { return v; }, t, {});
}

void fill_cuda(const Tensor& t, double value) {
  dispatch_storage(t.dtype(), "fill", [&](auto tag) {
    using T = typename decltype(tag)::type;
    fill_typed<T>(t, convert<T>(value));
  });
}

void memcpy_cuda(void* dst, Device dst_device, const void* src, Device src_device, size_t nbytes) {
  if (nbytes == 0) return;
  if (dst_device.is_cuda() && src_device.is_cpu()) {
    const cudaStream_t s = stream(dst_device);
    DeviceGuard guard(dst_device);
    KS_CUDA_CHECK(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyHostToDevice, s));
    if (is_pinned_ptr(src)) record_pinned_use(src, s);
  } else if (dst_device.is_cpu() && src_device.is_cuda()) {
    const cudaStream_t s = stream(src_device);
    DeviceGuard guard(src_device);
    KS_CUDA_CHECK(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDeviceToHost, s));
    KS_CUDA_CHECK(cudaStreamSynchronize(s));
  } else if (dst_device.is_cuda() && src_device.is_cuda()) {
    // Two devices, two streams: wait for the producer of src, copy on the
    // consumer's stream, and wait for the copy, since src's memory may be
    // reused by its own stream as soon as this returns.
    const cudaStream_t s_src = stream(src_device), s_dst = stream(dst_device);
    {
      DeviceGuard guard(src_device);
      KS_CUDA_CHECK(cudaStreamSynchronize(s_src));
    }
    DeviceGuard guard(dst_device);
    KS_CUDA_CHECK(cudaMemcpyPeerAsync(dst, dst_device.index, src, src_device.index, nbytes, s_dst));
    KS_CUDA_CHECK(cudaStreamSynchronize(s_dst));
  } else {
    KS_ASSERT(false);  // CPU to CPU never reaches the CUDA table
  }
}

// One thread per Philox block; element i = block * per + k.
template <class T> __global__ void random_kernel_impl(T* out, int64_t n, int per, RandomSpec spec) {
  const int64_t blocks = (n + per - 1) / per;
  for (int64_t b : grid_stride(blocks)) {
    double vals[4];
    random_block_values(spec, per, uint64_t(b), vals);
    for (int k = 0; k < per; ++k) {
      const int64_t i = b * per + k;
      if (i < n) out[i] = static_cast<T>(vals[k]);
    }
  }
}

void random_cuda(const Tensor& t, const RandomSpec& spec) {
  const int per = int(random_values_per_block(spec.kind, t.dtype()));
  const int64_t n = t.numel();
  const int dev = t.device().index;
  dispatch_numeric(t.dtype(), "random", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const cudaStream_t s = stream(dev);
    DeviceGuard guard(t.device());
    random_kernel_impl<T>
        <<<grid_for((n + per - 1) / per, kThreads, dev), kThreads, 0, s>>>(static_cast<T*>(t.data_ptr()), n, per, spec);
    KS_CUDA_LAUNCH_CHECK();
  });
}

}  // namespace

KS_REGISTER_KERNEL(copy_kernel, CUDA, copy_cuda);
KS_REGISTER_KERNEL(fill_kernel, CUDA, fill_cuda);
KS_REGISTER_KERNEL(device_memcpy, CUDA, memcpy_cuda);
KS_REGISTER_KERNEL(random_kernel, CUDA, random_cuda);

}  // namespace ks::cuda
