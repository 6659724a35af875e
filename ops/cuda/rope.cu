// ops/cuda/rope.cu — registers the CUDA kernel of rope: ops/rope_formulas.h's
// two passes run by cuda_for_each_index (a thread per table entry, then a
// thread per pair). float64 angles as on the CPU, so the two backends differ
// only by the math library's sin/cos (an ulp of float64).
#include "core/cuda/loops.cuh"
#include "ops/rope_formulas.h"
#include "ops/through_float32.h"

namespace ks::cuda {
[[maybe_unused]] const bool rope_kernel_registered = [] {
  rope_kernel.set(DeviceType::CUDA, through_float32::rope<rope_formulas::rope<CudaLoops>>);
  return true;
}();
}  // namespace ks::cuda
