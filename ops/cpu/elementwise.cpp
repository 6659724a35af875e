// ops/cpu/elementwise.cpp — registers the CPU kernels of every binary, scalar
// and fused in-place elementwise op: those of ops/elementwise_kernels.h run by
// cpu_map, whose contiguous loops GCC vectorises.
#include "ops/cpu/loops.h"
#include "ops/elementwise_kernels.h"

namespace ks::cpu {
[[maybe_unused]] const bool elementwise_kernels_registered =
    elementwise_kernels::register_elementwise_kernels<CpuLoops>(DeviceType::CPU);
}  // namespace ks::cpu
