// ops/cuda/compare.cu — registers the CUDA kernels of comparisons, logical
// ops, where and masked_fill: those of ops/compare_formulas.h run by cuda_map.
#include "core/cuda/loops.cuh"
#include "ops/compare.h"
#include "ops/compare_formulas.h"

namespace ks::cuda {
[[maybe_unused]] const bool compare_kernels_registered =
    compare_formulas::register_compare_kernels<CudaLoops>(DeviceType::CUDA);
}  // namespace ks::cuda
