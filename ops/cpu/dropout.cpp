// ops/cpu/dropout.cpp — CPU kernels for dropout: one pass that draws the mask
// from Philox and applies it, and the masked scale of the backward.
#include "core/copy.h"
#include "core/parallel.h"
#include "core/random_values.h"
#include "ops/cpu/loops.h"
#include "ops/dropout.h"

namespace ks::cpu {
namespace {

constexpr int64_t kBlockGrain = 2048;  // Philox blocks (4 elements each) per parallel chunk

void dropout_cpu(const Tensor& out, const Tensor& mask, const Tensor& x_in, double keep, double scale,
                 uint64_t seed, uint64_t first_block) {
  const int64_t n = out.numel();
  if (n == 0) return;
  const Tensor x = contiguous_raw(x_in);
  bool* m = mask.data<bool>();
  dispatch_floating(x.dtype(), "dropout", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* xp = x.data<T>();
    T* o = out.data<T>();
    const T s = T(scale);
    parallel_for(0, (n + 3) / 4, kBlockGrain, [&](int64_t b0, int64_t b1) {
      for (int64_t b = b0; b < b1; ++b) {
        uint32_t w[4];
        philox4x32_10(seed, 0, first_block + uint64_t(b), w);
        for (int k = 0; k < 4; ++k) {
          const int64_t i = b * 4 + k;
          if (i >= n) break;
          const bool kept = bernoulli_draw(w, k, keep);
          m[i] = kept;
          o[i] = kept ? xp[i] * s : T(0);
        }
      }
    });
  });
}

void dropout_backward_cpu(const Tensor& dx, const Tensor& g, const Tensor& mask, double scale) {
  dispatch_floating(dx.dtype(), "dropout backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T s = T(scale);
    cpu_map<T, T, bool>([s](T gv, bool kept) { return kept ? gv * s : T(0); }, dx, {g, mask});
  });
}

}  // namespace
KS_REGISTER_KERNEL(dropout_kernel, CPU, dropout_cpu);
KS_REGISTER_KERNEL(dropout_backward_kernel, CPU, dropout_backward_cpu);
}  // namespace ks::cpu
