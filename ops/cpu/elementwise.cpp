// ops/cpu/elementwise.cpp — registers the CPU kernels of the binary, scalar
// and fused in-place elementwise ops: those of ops/elementwise_formulas.h run
// by cpu_map, whose contiguous loops GCC vectorises.
#include "ops/cpu/loops.h"
#include "ops/elementwise_formulas.h"

namespace ks::cpu {
using Kernels = elementwise_formulas::elementwise_kernels<CpuLoops>;
KS_REGISTER_KERNEL(binary_kernel, CPU, Kernels::binary);
KS_REGISTER_KERNEL(scalar_kernel, CPU, Kernels::scalar);
KS_REGISTER_KERNEL(binary_backward_kernel, CPU, Kernels::binary_backward);
KS_REGISTER_KERNEL(inplace_kernel, CPU, Kernels::inplace);
}  // namespace ks::cpu
