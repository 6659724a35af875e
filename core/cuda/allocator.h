// core/cuda/allocator.h — the CUDA backend's internal view of its two
// allocators (device memory, pinned host memory), for the copy kernels.
// The public side (statistics, pinned_empty) is core/cuda.h.
#pragma once

#include <cuda_runtime.h>

namespace ks::cuda {

// Whether ptr lies inside a live pinned host block.
bool is_pinned_ptr(const void* ptr);
// Records that work just queued on `s` reads the pinned block holding ptr:
// when that block is freed it is not reused before this work has finished.
void record_pinned_use(const void* ptr, cudaStream_t s);

}  // namespace ks::cuda
