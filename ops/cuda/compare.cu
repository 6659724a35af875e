// ops/cuda/compare.cu — registers the CUDA kernels of comparisons, logical
// ops, where and masked_fill: those of ops/compare_formulas.h run by cuda_map.
#include "core/cuda/loops.cuh"
#include "ops/compare.h"
#include "ops/compare_formulas.h"

namespace ks::cuda {
using Kernels = compare_formulas::compare_kernels<CudaLoops>;
KS_REGISTER_KERNEL(compare_kernel, CUDA, Kernels::compare);
KS_REGISTER_KERNEL(compare_scalar_kernel, CUDA, Kernels::compare_scalar);
KS_REGISTER_KERNEL(logical_kernel, CUDA, Kernels::logical);
KS_REGISTER_KERNEL(where_kernel, CUDA, Kernels::where);
KS_REGISTER_KERNEL(masked_fill_kernel, CUDA, Kernels::masked_fill);
}  // namespace ks::cuda
