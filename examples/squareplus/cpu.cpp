// examples/squareplus/cpu.cpp — registers squareplus's CPU kernels: kernels.h's
// run by Keystone's CPU loop (ops/cpu/loops.h: parallel over oneTBB, a plain
// contiguous loop that GCC vectorises). Registration happens in a static
// initialiser, so this object file must be linked in whole (CMakeLists.txt
// makes the op an object library for that reason).
#include "ops/cpu/loops.h"
#include "squareplus/kernels.h"
#include "squareplus/squareplus.h"

namespace myops {
KS_REGISTER_KERNEL(squareplus_kernel, CPU, squareplus_forward<ks::cpu::CpuLoops>);
KS_REGISTER_KERNEL(squareplus_backward_kernel, CPU, squareplus_backward<ks::cpu::CpuLoops>);
}  // namespace myops
