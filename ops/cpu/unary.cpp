// ops/cpu/unary.cpp — registers the CPU kernels of every unary op: those of
// ops/unary_kernels.h run by cpu_map, whose contiguous loop GCC vectorises
// (float32 transcendentals from vec_math.h through ops/kernel_math.h, float64
// from libm).
#include "ops/cpu/loops.h"
#include "ops/unary_kernels.h"

namespace ks::cpu {
[[maybe_unused]] const bool unary_kernels_registered = unary_kernels::register_unary_kernels<CpuLoops>(DeviceType::CPU);
}  // namespace ks::cpu
