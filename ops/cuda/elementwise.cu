// ops/cuda/elementwise.cu — registers the CUDA kernels of the binary, scalar
// and fused in-place elementwise ops: those of ops/elementwise_formulas.h run
// by cuda_map over any strides and broadcast views.
#include "core/cuda/loops.cuh"
#include "ops/elementwise_formulas.h"

namespace ks::cuda {
using Kernels = elementwise_formulas::elementwise_kernels<CudaLoops>;
KS_REGISTER_KERNEL(binary_kernel, CUDA, Kernels::binary);
KS_REGISTER_KERNEL(scalar_kernel, CUDA, Kernels::scalar);
KS_REGISTER_KERNEL(binary_backward_kernel, CUDA, Kernels::binary_backward);
KS_REGISTER_KERNEL(inplace_kernel, CUDA, Kernels::inplace);
}  // namespace ks::cuda
