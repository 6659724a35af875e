// ops/cpu/inplace.cpp — CPU kernel for the fused in-place updates (add_ with
// alpha, addcmul_, addcdiv_); the other in-place ops reuse the out-of-place
// kernels with the target as output.
#include "ops/cpu/loops.h"
#include "ops/inplace.h"

namespace ks::cpu {
namespace {

void inplace_cpu(InplaceOp op, double alpha, const Tensor& t, const Tensor& a, const Tensor& b) {
  dispatch_numeric(t.dtype(), "inplace", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T c = static_cast<T>(alpha);
    switch (op) {
      case InplaceOp::AddScaled: cpu_map<T, T, T>([c](T x, T y) { return T(x + c * y); }, t, {t, a}); return;
      case InplaceOp::Addcmul:
      case InplaceOp::Addcdiv:
        if constexpr (std::is_floating_point_v<T>) {
          if (op == InplaceOp::Addcmul) cpu_map<T, T, T, T>([c](T x, T p, T q) { return x + c * p * q; }, t, {t, a, b});
          else cpu_map<T, T, T, T>([c](T x, T p, T q) { return x + c * p / q; }, t, {t, a, b});
          return;
        }
        break;
    }
    KS_ASSERT(false);
  });
}

}  // namespace
KS_REGISTER_KERNEL(inplace_kernel, CPU, inplace_cpu);
}  // namespace ks::cpu
