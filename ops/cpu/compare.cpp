// ops/cpu/compare.cpp — registers the CPU kernels of every comparison and
// logical op and of where and masked_fill: those of ops/compare_kernels.h run
// by cpu_map.
#include "ops/compare_kernels.h"
#include "ops/cpu/loops.h"

namespace ks::cpu {
[[maybe_unused]] const bool compare_kernels_registered =
    compare_kernels::register_compare_kernels<CpuLoops>(DeviceType::CPU);
}  // namespace ks::cpu
