// ops/cpu/compare.cpp — registers the CPU kernels of comparisons, logical ops,
// where and masked_fill: those of ops/compare_formulas.h run by cpu_map.
#include "ops/compare.h"
#include "ops/compare_formulas.h"
#include "ops/cpu/loops.h"

namespace ks::cpu {
using Kernels = compare_formulas::compare_kernels<CpuLoops>;
KS_REGISTER_KERNEL(compare_kernel, CPU, Kernels::compare);
KS_REGISTER_KERNEL(compare_scalar_kernel, CPU, Kernels::compare_scalar);
KS_REGISTER_KERNEL(logical_kernel, CPU, Kernels::logical);
KS_REGISTER_KERNEL(where_kernel, CPU, Kernels::where);
KS_REGISTER_KERNEL(masked_fill_kernel, CPU, Kernels::masked_fill);
}  // namespace ks::cpu
