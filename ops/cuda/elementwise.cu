// ops/cuda/elementwise.cu — registers the CUDA kernels of every binary, scalar
// and fused in-place elementwise op: those of ops/elementwise_kernels.h run by
// cuda_map over any strides and broadcast views.
#include "core/cuda/loops.cuh"
#include "ops/elementwise_kernels.h"

namespace ks::cuda {
[[maybe_unused]] const bool elementwise_kernels_registered =
    elementwise_kernels::register_elementwise_kernels<CudaLoops>(DeviceType::CUDA);
}  // namespace ks::cuda
