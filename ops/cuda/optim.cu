// ops/cuda/optim.cu — the GPU's optimizer kernels: registers the fused
// Adam/SGD updates and the scale of ops/optim_formulas.h (a thread per
// element, 16-bit parameters too), and holds gradient clipping's sum of
// squares (any floating dtype), deterministic (block_reduce.cuh) and returned
// to the host as a double, which synchronises the stream.
#include "ops/cuda/block_reduce.cuh"
#include "ops/kernel_dtypes.h"
#include "ops/optim.h"
#include "ops/optim_formulas.h"

namespace ks::cuda {
namespace {

template <class T> double sum_squares_typed(const Tensor& t) {
  Tensor result = Tensor::empty({}, kFloat64, t.device());
  const T* x = static_cast<const T*>(t.data_ptr());
  double* r = result.data<double>();
  sum_all(
      t.device(), t.numel(),
      [x] __device__(int64_t i) {
        const double xi = widen(x[i]);  // exact: 16-bit values widen to float
        return xi * xi;
      },
      [r] __device__(double total) { *r = total; });
  return result.item<double>();
}

double sum_squares_cuda(const Tensor& t) {
  return dispatch_floating16(t.dtype(), "sum_of_squares",
                             [&](auto tag) { return sum_squares_typed<typename decltype(tag)::type>(t); });
}

}  // namespace
[[maybe_unused]] const bool optim_kernels_registered =
    optim_formulas::register_optim_kernels<CudaLoops>(DeviceType::CUDA);
KS_REGISTER_KERNEL(sum_squares_kernel, CUDA, sum_squares_cuda);
}  // namespace ks::cuda
