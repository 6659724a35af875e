// ops/cuda/optim.cu — CUDA kernels for the fused optimizer updates (one pass
// per parameter applying the update of ops/optim_formulas.h, PyTorch's
// non-foreach Adam/AdamW/SGD) and for gradient clipping's scale and sum of
// squares. The
// sum of squares is deterministic (block_reduce.cuh) and comes back to the
// host as a double, which synchronises the stream.
#include <cmath>

#include "ops/cuda/block_reduce.cuh"
#include "ops/optim.h"
#include "ops/optim_formulas.h"

namespace ks::cuda {
namespace {

using namespace optim_formulas;

void adam_cuda(const Tensor& p, const Tensor& g, const Tensor& m, const Tensor& v, const AdamHyper& h) {
  dispatch_floating(p.dtype(), "adam_update_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    cuda_for_each_index(p.device(), p.numel(), AdamStep<T>(h, p.data<T>(), g.data<T>(), m.data<T>(), v.data<T>()));
  });
}

void sgd_cuda(const Tensor& p, const Tensor& g, const Tensor& buf, const SgdHyper& h) {
  dispatch_floating(p.dtype(), "sgd_update_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* b = h.momentum != 0 ? buf.data<T>() : nullptr;
    cuda_for_each_index(p.device(), p.numel(), SgdStep<T>(h, p.data<T>(), g.data<T>(), b));
  });
}

template <class T>
void scale_typed(const Tensor& t, double s) {
  const T c = T(s);
  cuda_map<T, T>([c] __device__(T x) { return T(x * c); }, t, {t});
}

void scale_cuda(const Tensor& t, double s) {
  dispatch_floating(t.dtype(), "scale_", [&](auto tag) { scale_typed<typename decltype(tag)::type>(t, s); });
}

template <class T>
double sum_squares_typed(const Tensor& t) {
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
KS_REGISTER_KERNEL(adam_kernel, CUDA, adam_cuda);
KS_REGISTER_KERNEL(sgd_kernel, CUDA, sgd_cuda);
KS_REGISTER_KERNEL(scale_kernel, CUDA, scale_cuda);
KS_REGISTER_KERNEL(sum_squares_kernel, CUDA, sum_squares_cuda);
}  // namespace ks::cuda
