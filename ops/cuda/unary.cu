// ops/cuda/unary.cu — registers the CUDA kernels of the unary ops: the kernels
// of ops/unary_formulas.h run by cuda_map, with CUDA's math library in place
// of vec_math.h (ops/kernel_math.h), so float32 results agree with the CPU's
// to a few ulp.
#include "core/cuda/loops.cuh"
#include "ops/unary.h"
#include "ops/unary_formulas.h"

namespace ks::cuda {
[[maybe_unused]] const bool unary_kernels_registered =
    unary_formulas::register_unary_kernels<CudaLoops>(DeviceType::CUDA);
}  // namespace ks::cuda
