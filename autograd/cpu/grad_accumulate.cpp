// autograd/cpu/grad_accumulate.cpp — CPU kernel for summing gradients; 16-bit
// gradients are added in float32 and rounded once (compute_t, core/dtype.h).
#include "autograd/grad_accumulate.h"

#include "core/strided_loop.h"

namespace ks {
namespace {

void grad_add_cpu(const Tensor& out, const Tensor& a, const Tensor& b) {
  auto L = make_strided_layout<3>(out.sizes(), {out.strides(), a.strides(), b.strides()},
                                  {out.element_size(), a.element_size(), b.element_size()});
  dispatch_floating16(out.dtype(), "grad accumulation", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    strided_for_each<3>(
        L, {static_cast<char*>(out.data_ptr()), static_cast<char*>(a.data_ptr()), static_cast<char*>(b.data_ptr())},
        kElementwiseGrain, [](std::array<char*, 3> p, int64_t n, std::array<int64_t, 3> s) {
          constexpr int64_t sz = sizeof(T);
          if (s[0] == sz && s[1] == sz && s[2] == sz) {
            T* o = reinterpret_cast<T*>(p[0]);
            const T* x = reinterpret_cast<const T*>(p[1]);
            const T* y = reinterpret_cast<const T*>(p[2]);
            for (int64_t i = 0; i < n; ++i) o[i] = T(static_cast<C>(x[i]) + static_cast<C>(y[i]));
          } else {
            for (int64_t i = 0; i < n; ++i)
              *reinterpret_cast<T*>(p[0] + i * s[0]) = T(static_cast<C>(*reinterpret_cast<const T*>(p[1] + i * s[1])) +
                                                         static_cast<C>(*reinterpret_cast<const T*>(p[2] + i * s[2])));
          }
        });
  });
}
KS_REGISTER_KERNEL(grad_add_kernel, CPU, grad_add_cpu);

}  // namespace
}  // namespace ks
