// ops/cpu/elementwise.cpp — registers the CPU kernels of the binary, scalar
// and fused in-place elementwise ops: those of ops/elementwise_formulas.h run
// by cpu_map, whose contiguous loops GCC vectorises.
#include "ops/cpu/loops.h"
#include "ops/elementwise_formulas.h"

namespace ks::cpu {
[[maybe_unused]] const bool elementwise_kernels_registered =
    elementwise_formulas::register_elementwise_kernels<CpuLoops>(DeviceType::CPU);
}  // namespace ks::cpu
