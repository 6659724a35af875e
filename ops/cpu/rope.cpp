// ops/cpu/rope.cpp — registers the CPU kernel of rope: ops/rope_formulas.h's
// two passes run by CpuLoops (oneTBB chunks of kGrain table entries / pairs).
#include "ops/cpu/loops.h"
#include "ops/rope_formulas.h"
#include "ops/through_float32.h"

namespace ks::cpu {
namespace {
[[maybe_unused]] const bool rope_kernel_registered = [] {
  rope_kernel.set(DeviceType::CPU, through_float32::rope<rope_formulas::rope<CpuLoops>>);
  return true;
}();
}  // namespace
}  // namespace ks::cpu
