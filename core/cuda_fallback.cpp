// core/cuda_fallback.cpp — core/cuda.h in a build without the CUDA backend:
// no devices, empty statistics, and a clear error where a feature needs the
// backend. A CUDA build compiles core/cuda/ instead and this file is empty.
#include "core/cuda.h"

#ifndef KS_WITH_CUDA

namespace ks {

int cuda_device_count() { return 0; }
bool cuda_compiled() { return false; }
CudaMemoryStats cuda_memory_stats(int) { return {}; }
void cuda_empty_cache(int) {}
void cuda_synchronize(int) {}
void cuda_set_deterministic(bool) {}
bool cuda_deterministic() { return true; }

Tensor pinned_empty(const Shape&, DType) {
  throw Error("pinned_empty: pinned host memory needs the CUDA backend (Keystone was built with KS_CUDA=OFF)");
}
bool is_pinned(const Tensor&) { return false; }

}  // namespace ks

#endif  // KS_WITH_CUDA
