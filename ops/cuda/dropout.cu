// ops/cuda/dropout.cu — registers the CUDA kernels of dropout: those of
// ops/dropout_formulas.h run by cuda_for_each_index (a thread per Philox
// block) and cuda_map. The mask equals the CPU's for a seed: the draw is
// integer arithmetic and one exact conversion, nothing a compiler can round
// differently.
#include "core/cuda/loops.cuh"
#include "ops/dropout_formulas.h"

namespace ks::cuda {
[[maybe_unused]] const bool dropout_kernels_registered =
    dropout_formulas::register_dropout_kernels<CudaLoops>(DeviceType::CUDA);
}  // namespace ks::cuda
