// ops/cuda/unary.cu — registers the CUDA kernels of the unary ops: the kernels
// of ops/unary_formulas.h run by cuda_map, with CUDA's math library in place
// of vec_math.h (ops/kernel_math.h), so float32 results agree with the CPU's
// to a few ulp.
#include "core/cuda/loops.cuh"
#include "ops/unary.h"
#include "ops/unary_formulas.h"

namespace ks::cuda {
KS_REGISTER_KERNEL(unary_kernel, CUDA, unary_formulas::unary_forward<CudaLoops>);
KS_REGISTER_KERNEL(unary_backward_kernel, CUDA, unary_formulas::unary_backward<CudaLoops>);
}  // namespace ks::cuda
