// examples/squareplus/cuda.cu — registers squareplus's CUDA kernels: the same
// kernels.h, run by Keystone's GPU loop (core/cuda/loops.cuh: one launch on
// the device's stream, flat or strided indexing). Built only when Keystone
// was built with CUDA (Keystone_WITH_CUDA), linked through Keystone::cuda.
#include "core/cuda/loops.cuh"
#include "squareplus/kernels.h"
#include "squareplus/squareplus.h"

namespace myops {
KS_REGISTER_KERNEL(squareplus_kernel, CUDA, squareplus_forward<ks::cuda::CudaLoops>);
KS_REGISTER_KERNEL(squareplus_backward_kernel, CUDA, squareplus_backward<ks::cuda::CudaLoops>);
}  // namespace myops
