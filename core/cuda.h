// core/cuda.h — what the rest of Keystone (and a user) may ask of the CUDA
// backend, in every build: is there a device, how much memory is held, and
// pinned host memory for loaders.
//
// In a build without CUDA (KS_CUDA=OFF) these still link: the queries report
// no device and empty statistics, and pinned_empty throws. In a CUDA build
// with no usable driver or device, cuda_device_count() is 0 — it never throws
// or prints. The kernels, the allocator and the streams are in core/cuda/;
// this header is not where they are declared.
#pragma once

#include <cstddef>
#include <string>

#include "core/tensor.h"

namespace ks {

// Number of CUDA devices Keystone can use; 0 without the backend, a driver or a device.
int cuda_device_count();
inline bool cuda_available() { return cuda_device_count() > 0; }
// True if Keystone was compiled with the CUDA backend (whether or not a device is present).
bool cuda_compiled();

// Statistics of the caching device allocator, per device.
struct CudaMemoryStats {
  size_t bytes_in_use = 0;    // handed out to tensors and not yet freed
  size_t bytes_cached = 0;    // freed by tensors, kept for reuse
  size_t bytes_reserved = 0;  // obtained from cudaMalloc: in use + cached
  size_t peak_in_use = 0;
};
CudaMemoryStats cuda_memory_stats(int device = 0);
// Returns the device's cached blocks to the driver (cudaFree). Blocks in use stay.
void cuda_empty_cache(int device = 0);
// Waits until every kernel and copy queued on the device's stream has finished.
void cuda_synchronize(int device = 0);

// Whether kernels that could accumulate with atomics, in an order that varies
// from run to run (embedding backward), use their deterministic form instead:
// the same result every run, bitwise. On by default; off trades that for speed.
void cuda_set_deterministic(bool on);
bool cuda_deterministic();

// A new contiguous CPU tensor in page-locked (pinned) memory: copies from it
// to a CUDA device run asynchronously, so a loader can stage the next batch
// while the GPU computes. Throws in a build without CUDA.
Tensor pinned_empty(const Shape& shape, DType dtype);
// Whether t's bytes are pinned host memory from pinned_empty.
bool is_pinned(const Tensor& t);

}  // namespace ks
