// ops/cpu/optim.cpp — the CPU's optimizer kernels: registers the fused
// Adam/SGD updates and the scale of ops/optim_formulas.h, and holds gradient
// clipping's sum of squares (fixed chunks added in order: deterministic).
#include <algorithm>
#include <vector>

#include "core/parallel.h"
#include "ops/cpu/loops.h"
#include "ops/kernel_dtypes.h"
#include "ops/optim.h"
#include "ops/optim_formulas.h"

namespace ks::cpu {
namespace {

double sum_squares_cpu(const Tensor& t) {
  return dispatch_floating16(t.dtype(), "sum_of_squares", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = static_cast<const T*>(t.data_ptr());
    const int64_t n = t.numel();
    // Fixed chunks, summed in order: the result does not depend on the thread count.
    const int64_t chunk = 1 << 16, chunks = (n + chunk - 1) / chunk;
    std::vector<double> partial(size_t(chunks), 0.0);
    parallel_for(0, chunks, 1, [&](int64_t b, int64_t e) {
      for (int64_t c = b; c < e; ++c) {
        double acc = 0;
        for (int64_t i = c * chunk, end = std::min(n, (c + 1) * chunk); i < end; ++i) {
          const double xi = widen(x[i]);  // exact: 16-bit values widen to float
          acc += xi * xi;
        }
        partial[size_t(c)] = acc;
      }
    });
    double total = 0;
    for (double v : partial) total += v;
    return total;
  });
}

}  // namespace
[[maybe_unused]] const bool optim_kernels_registered =
    optim_formulas::register_optim_kernels<CpuLoops>(DeviceType::CPU);
KS_REGISTER_KERNEL(sum_squares_kernel, CPU, sum_squares_cpu);
}  // namespace ks::cpu
