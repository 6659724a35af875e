// ops/cuda/unary.cu — CUDA kernels for the unary ops and their fused
// backwards: the formulas of ops/unary_formulas.h, each run by cuda_map, with
// CUDA's math library in place of vec_math.h (ops/kernel_math.h), so float32
// results agree with the CPU's to a few ulp.
#include "core/cuda/loops.cuh"
#include "ops/unary.h"
#include "ops/unary_formulas.h"

namespace ks::cuda {
namespace {

using namespace unary_formulas;

void unary_cuda(UnaryOp op, const UnaryParams& p, const Tensor& out, const Tensor& x) {
  dispatch_numeric(out.dtype(), "unary op", [&](auto tag) {
    using T = typename decltype(tag)::type;
    with_unary_forward<T>(op, p, [&](auto f) { cuda_map<T, T>(f, out, {x}); });
  });
}

void unary_backward_cuda(UnaryOp op, const UnaryParams& p, const Tensor& gi, const Tensor& go, const Tensor& s) {
  dispatch_floating(gi.dtype(), "unary backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    with_unary_backward<T>(op, p, [&](auto f) { cuda_map<T, T, T>(f, gi, {go, s}); });
  });
}

}  // namespace
KS_REGISTER_KERNEL(unary_kernel, CUDA, unary_cuda);
KS_REGISTER_KERNEL(unary_backward_kernel, CUDA, unary_backward_cuda);
}  // namespace ks::cuda
