// ops/cuda/compare.cu — registers the CUDA kernels of every comparison and
// logical op and of where and masked_fill: those of ops/compare_kernels.h run
// by cuda_map.
#include "core/cuda/loops.cuh"
#include "ops/compare_kernels.h"

namespace ks::cuda {
[[maybe_unused]] const bool compare_kernels_registered =
    compare_kernels::register_compare_kernels<CudaLoops>(DeviceType::CUDA);
}  // namespace ks::cuda
