// ops/cuda/optim.cu — CUDA kernels for the fused optimizer updates (one pass
// per parameter, the formulas of ops/cpu/optim.cpp, PyTorch's non-foreach
// Adam/AdamW/SGD) and for gradient clipping's scale and sum of squares. The
// sum of squares is deterministic (block_reduce.cuh) and comes back to the
// host as a double, which synchronises the stream.
#include <cmath>

#include "ops/cuda/block_reduce.cuh"
#include "ops/optim.h"

namespace ks::cuda {
namespace {

template <class T>
__global__ void adam_kernel_impl(T* p, const T* g, T* m, T* v, int64_t n, T b1, T b2, T one_b1, T one_b2,
                                 T step_size, T inv_sqrt_bc2, T eps, T decay, T wd, bool decoupled) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    T grad = g[i];
    T param = p[i];
    if (decoupled) param *= decay;
    else grad += wd * param;
    const T mi = b1 * m[i] + one_b1 * grad;
    const T vi = b2 * v[i] + one_b2 * grad * grad;
    m[i] = mi;
    v[i] = vi;
    p[i] = param - step_size * mi / (std::sqrt(vi) * inv_sqrt_bc2 + eps);
  }
}

void adam_cuda(const Tensor& p, const Tensor& g, const Tensor& m, const Tensor& v, const AdamHyper& h) {
  const int64_t n = p.numel();
  if (n == 0) return;
  const double bc1 = 1.0 - std::pow(h.beta1, double(h.step));
  const double bc2 = 1.0 - std::pow(h.beta2, double(h.step));
  const int dev = p.device().index;
  dispatch_floating(p.dtype(), "adam_update_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const cudaStream_t s = stream(dev);
    DeviceGuard guard(p.device());
    adam_kernel_impl<T><<<grid_for(n, kThreads, dev), kThreads, 0, s>>>(
        p.data<T>(), g.data<T>(), m.data<T>(), v.data<T>(), n, T(h.beta1), T(h.beta2), T(1 - h.beta1),
        T(1 - h.beta2), T(h.lr / bc1), T(1.0 / std::sqrt(bc2)), T(h.eps), T(1.0 - h.lr * h.weight_decay),
        T(h.weight_decay), h.decoupled);
    KS_CUDA_LAUNCH_CHECK();
  });
}

template <class T>
__global__ void sgd_kernel_impl(T* p, const T* g, T* buf, int64_t n, T lr, T mu, T damp, T wd, bool nesterov,
                                bool first_step) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    T d = g[i] + wd * p[i];
    if (buf) {
      const T bi = first_step ? d : mu * buf[i] + damp * d;
      buf[i] = bi;
      d = nesterov ? d + mu * bi : bi;
    }
    p[i] -= lr * d;
  }
}

void sgd_cuda(const Tensor& p, const Tensor& g, const Tensor& buf, const SgdHyper& h) {
  const int64_t n = p.numel();
  if (n == 0) return;
  const int dev = p.device().index;
  dispatch_floating(p.dtype(), "sgd_update_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const cudaStream_t s = stream(dev);
    DeviceGuard guard(p.device());
    sgd_kernel_impl<T><<<grid_for(n, kThreads, dev), kThreads, 0, s>>>(
        p.data<T>(), g.data<T>(), h.momentum != 0 ? buf.data<T>() : nullptr, n, T(h.lr), T(h.momentum),
        T(1 - h.dampening), T(h.weight_decay), h.nesterov, h.first_step);
    KS_CUDA_LAUNCH_CHECK();
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
