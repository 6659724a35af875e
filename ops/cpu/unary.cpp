// ops/cpu/unary.cpp — CPU kernels for the unary ops and their fused backwards:
// the formulas of ops/unary_formulas.h, each run by cpu_map, whose contiguous
// loop GCC vectorises (float32 transcendentals from vec_math.h through
// ops/kernel_math.h, float64 from libm). pow with an arbitrary exponent is
// the one scalar libm call left.
#include "ops/cpu/loops.h"
#include "ops/unary.h"
#include "ops/unary_formulas.h"

namespace ks::cpu {
namespace {

using namespace unary_formulas;

void unary_cpu(UnaryOp op, const UnaryParams& p, const Tensor& out, const Tensor& x) {
  dispatch_numeric(out.dtype(), "unary op", [&](auto tag) {
    using T = typename decltype(tag)::type;
    with_unary_forward<T>(op, p, [&](auto f) { cpu_map<T, T>(f, out, {x}); });
  });
}

void unary_backward_cpu(UnaryOp op, const UnaryParams& p, const Tensor& gi, const Tensor& go, const Tensor& s) {
  dispatch_floating(gi.dtype(), "unary backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    with_unary_backward<T>(op, p, [&](auto f) { cpu_map<T, T, T>(f, gi, {go, s}); });
  });
}

}  // namespace
KS_REGISTER_KERNEL(unary_kernel, CPU, unary_cpu);
KS_REGISTER_KERNEL(unary_backward_kernel, CPU, unary_backward_cpu);
}  // namespace ks::cpu
