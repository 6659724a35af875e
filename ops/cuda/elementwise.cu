// ops/cuda/elementwise.cu — registers the CUDA kernels of the binary, scalar
// and fused in-place elementwise ops: those of ops/elementwise_formulas.h run
// by cuda_map over any strides and broadcast views.
#include "core/cuda/loops.cuh"
#include "ops/elementwise_formulas.h"

namespace ks::cuda {
[[maybe_unused]] const bool elementwise_kernels_registered =
    elementwise_formulas::register_elementwise_kernels<CudaLoops>(DeviceType::CUDA);
}  // namespace ks::cuda
