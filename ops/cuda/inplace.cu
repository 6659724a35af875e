// ops/cuda/inplace.cu — the CUDA kernel for the fused in-place updates
// (add_ with alpha, addcmul_, addcdiv_). The target is both output and first
// input of cuda_map: each element reads and writes only itself, and
// ops/inplace.cpp has already copied any operand that partially overlaps it.
#include "core/cuda/loops.cuh"
#include "ops/inplace.h"

namespace ks::cuda {
namespace {

template <class T>
void inplace_typed(InplaceOp op, double alpha, const Tensor& t, const Tensor& a, const Tensor& b) {
  const T c = static_cast<T>(alpha);
  switch (op) {
    case InplaceOp::AddScaled: cuda_map<T, T, T>([c] __device__(T x, T y) { return T(x + c * y); }, t, {t, a}); return;
    case InplaceOp::Addcmul:
    case InplaceOp::Addcdiv:
      if constexpr (std::is_floating_point_v<T>) {
        if (op == InplaceOp::Addcmul)
          cuda_map<T, T, T, T>([c] __device__(T x, T p, T q) { return x + c * p * q; }, t, {t, a, b});
        else
          cuda_map<T, T, T, T>([c] __device__(T x, T p, T q) { return x + c * p / q; }, t, {t, a, b});
        return;
      }
      break;
  }
  KS_ASSERT(false);
}

void inplace_cuda(InplaceOp op, double alpha, const Tensor& t, const Tensor& a, const Tensor& b) {
  dispatch_numeric(t.dtype(), "inplace", [&](auto tag) { inplace_typed<typename decltype(tag)::type>(op, alpha, t, a, b); });
}

}  // namespace
KS_REGISTER_KERNEL(inplace_kernel, CUDA, inplace_cuda);
}  // namespace ks::cuda
