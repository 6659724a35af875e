// ops/cpu/optim.cpp — CPU kernels for the fused optimizer updates (each a
// single parallel pass over contiguous arrays applying the update of
// ops/optim_formulas.h) and for gradient clipping's scale and sum of squares.
#include <cmath>
#include <vector>

#include "core/parallel.h"
#include "ops/optim.h"
#include "ops/optim_formulas.h"

namespace ks::cpu {
namespace {

using namespace optim_formulas;

void adam_cpu(const Tensor& p, const Tensor& g, const Tensor& m, const Tensor& v, const AdamHyper& h) {
  dispatch_floating(p.dtype(), "adam_update_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const AdamStep<T> step(h, p.data<T>(), g.data<T>(), m.data<T>(), v.data<T>());
    parallel_for(0, p.numel(), kElementwiseGrain / 4, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) step(i);
    });
  });
}

void sgd_cpu(const Tensor& p, const Tensor& g, const Tensor& buf, const SgdHyper& h) {
  dispatch_floating(p.dtype(), "sgd_update_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const SgdStep<T> step(h, p.data<T>(), g.data<T>(), h.momentum != 0 ? buf.data<T>() : nullptr);
    parallel_for(0, p.numel(), kElementwiseGrain / 2, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) step(i);
    });
  });
}

void scale_cpu(const Tensor& t, double s) {
  dispatch_floating(t.dtype(), "scale_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* x = t.data<T>();
    const T c = T(s);
    parallel_for(0, t.numel(), kElementwiseGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) x[i] *= c;
    });
  });
}

double sum_squares_cpu(const Tensor& t) {
  return dispatch_floating(t.dtype(), "sum_of_squares", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = static_cast<const T*>(t.data_ptr());
    const int64_t n = t.numel();
    // Fixed chunks, summed in order: the result does not depend on the thread count.
    const int64_t chunk = 1 << 16, chunks = (n + chunk - 1) / chunk;
    std::vector<double> partial(size_t(chunks), 0.0);
    parallel_for(0, chunks, 1, [&](int64_t b, int64_t e) {
      for (int64_t c = b; c < e; ++c) {
        double acc = 0;
        for (int64_t i = c * chunk, end = std::min(n, (c + 1) * chunk); i < end; ++i) acc += double(x[i]) * double(x[i]);
        partial[size_t(c)] = acc;
      }
    });
    double total = 0;
    for (double v : partial) total += v;
    return total;
  });
}

}  // namespace
KS_REGISTER_KERNEL(adam_kernel, CPU, adam_cpu);
KS_REGISTER_KERNEL(sgd_kernel, CPU, sgd_cpu);
KS_REGISTER_KERNEL(scale_kernel, CPU, scale_cpu);
KS_REGISTER_KERNEL(sum_squares_kernel, CPU, sum_squares_cpu);
}  // namespace ks::cpu
