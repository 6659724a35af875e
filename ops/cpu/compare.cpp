// ops/cpu/compare.cpp — registers the CPU kernels of comparisons, logical ops,
// where and masked_fill: those of ops/compare_formulas.h run by cpu_map.
#include "ops/compare.h"
#include "ops/compare_formulas.h"
#include "ops/cpu/loops.h"

namespace ks::cpu {
[[maybe_unused]] const bool compare_kernels_registered =
    compare_formulas::register_compare_kernels<CpuLoops>(DeviceType::CPU);
}  // namespace ks::cpu
