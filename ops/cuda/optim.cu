// ops/cuda/optim.cu — the GPU's optimizer kernels: registers the fused
// Adam/SGD updates and the scale of ops/optim_formulas.h (a thread per
// element), and holds gradient clipping's sum of squares, deterministic
// (block_reduce.cuh) and returned to the host as a double, which
// synchronises the stream.
#include "ops/cuda/block_reduce.cuh"
#include "ops/optim.h"
#include "ops/optim_formulas.h"

namespace ks::cuda {
namespace {

template <class T> double sum_squares_typed(const Tensor& t) {
  Tensor result = Tensor::empty({}, kFloat64, t.device());
  const T* x = static_cast<const T*>(t.data_ptr());
  double* r = result.data<double>();
  sum_all(
      t.device(), t.numel(), [x] __device__(int64_t i) { return double(x[i]) * double(x[i]); },
      [r] __device__(double total) { *r = total; });
  return result.item<double>();
}

double sum_squares_cuda(const Tensor& t) {
  return dispatch_floating(t.dtype(), "sum_of_squares",
                           [&](auto tag) { return sum_squares_typed<typename decltype(tag)::type>(t); });
}

}  // namespace
[[maybe_unused]] const bool optim_kernels_registered =
    optim_formulas::register_optim_kernels<CudaLoops>(DeviceType::CUDA);
KS_REGISTER_KERNEL(sum_squares_kernel, CUDA, sum_squares_cuda);
}  // namespace ks::cuda
