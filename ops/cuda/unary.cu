// ops/cuda/unary.cu — registers the CUDA kernels of every unary op: those of
// ops/unary_kernels.h run by cuda_map, with CUDA's math library in place of
// vec_math.h (ops/kernel_math.h), so float32 results agree with the CPU's to
// a few ulp.
#include "core/cuda/loops.cuh"
#include "ops/unary_kernels.h"

namespace ks::cuda {
[[maybe_unused]] const bool unary_kernels_registered =
    unary_kernels::register_unary_kernels<CudaLoops>(DeviceType::CUDA);
}  // namespace ks::cuda
