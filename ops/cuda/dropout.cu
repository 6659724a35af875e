// ops/cuda/dropout.cu — CUDA kernels for dropout: one pass that draws the
// mask from Philox and applies it, and the masked scale of the backward.
//
// Element i draws Philox block first_block + i / 4 and keeps itself by
// core/random_values.h's bernoulli_draw, as ops/cpu/dropout.cpp does, so a
// seed gives the same mask on the CPU and on every GPU: the draw is integer
// arithmetic and one exact conversion, nothing a compiler can round
// differently.
#include "core/copy.h"
#include "core/cuda/loops.cuh"
#include "core/random_values.h"
#include "ops/dropout.h"

namespace ks::cuda {
namespace {

// One thread per Philox block of 4 elements.
template <class T>
__global__ void dropout_kernel_impl(T* out, bool* mask, const T* x, int64_t n, double keep, T scale, uint64_t seed,
                                    uint64_t first_block) {
  const int64_t blocks = (n + 3) / 4;
  for (int64_t b = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; b < blocks; b += int64_t(gridDim.x) * blockDim.x) {
    uint32_t w[4];
    philox4x32_10(seed, 0, first_block + uint64_t(b), w);
    for (int k = 0; k < 4; ++k) {
      const int64_t i = b * 4 + k;
      if (i >= n) break;
      const bool kept = bernoulli_draw(w, k, keep);
      mask[i] = kept;
      out[i] = kept ? T(x[i] * scale) : T(0);
    }
  }
}

void dropout_cuda(const Tensor& out, const Tensor& mask, const Tensor& x_in, double keep, double scale, uint64_t seed,
                  uint64_t first_block) {
  const int64_t n = out.numel();
  if (n == 0) return;
  const Tensor x = contiguous_raw(x_in);
  const int dev = x.device().index;
  dispatch_floating(x.dtype(), "dropout", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const cudaStream_t s = stream(dev);
    DeviceGuard guard(x.device());
    dropout_kernel_impl<T><<<grid_for((n + 3) / 4, kThreads, dev), kThreads, 0, s>>>(
        out.data<T>(), mask.data<bool>(), x.data<T>(), n, keep, T(scale), seed, first_block);
    KS_CUDA_LAUNCH_CHECK();
  });
}

template <class T>
void dropout_backward_typed(const Tensor& dx, const Tensor& g, const Tensor& mask, double scale) {
  const T s = T(scale);
  cuda_map<T, T, bool>([s] __device__(T gv, bool kept) { return kept ? T(gv * s) : T(0); }, dx, {g, mask});
}

void dropout_backward_cuda(const Tensor& dx, const Tensor& g, const Tensor& mask, double scale) {
  dispatch_floating(dx.dtype(), "dropout backward", [&](auto tag) {
    dropout_backward_typed<typename decltype(tag)::type>(dx, g, mask, scale);
  });
}

}  // namespace
KS_REGISTER_KERNEL(dropout_kernel, CUDA, dropout_cuda);
KS_REGISTER_KERNEL(dropout_backward_kernel, CUDA, dropout_backward_cuda);
}  // namespace ks::cuda
