// ops/cpu/unary.cpp — registers the CPU kernels of the unary ops: the kernels
// of ops/unary_formulas.h run by cpu_map, whose contiguous loop GCC
// vectorises (float32 transcendentals from vec_math.h through
// ops/kernel_math.h, float64 from libm).
#include "ops/cpu/loops.h"
#include "ops/unary.h"
#include "ops/unary_formulas.h"

namespace ks::cpu {
KS_REGISTER_KERNEL(unary_kernel, CPU, unary_formulas::unary_forward<CpuLoops>);
KS_REGISTER_KERNEL(unary_backward_kernel, CPU, unary_formulas::unary_backward<CpuLoops>);
}  // namespace ks::cpu
