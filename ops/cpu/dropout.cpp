// ops/cpu/dropout.cpp — registers the CPU kernels of dropout: those of
// ops/dropout_formulas.h run by parallel_for and cpu_map.
#include "ops/cpu/loops.h"
#include "ops/dropout_formulas.h"

namespace ks::cpu {
[[maybe_unused]] const bool dropout_kernels_registered =
    dropout_formulas::register_dropout_kernels<CpuLoops>(DeviceType::CPU);
}  // namespace ks::cpu
