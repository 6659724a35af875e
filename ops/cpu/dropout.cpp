// ops/cpu/dropout.cpp — the CPU kernels of dropout (ops/dropout.h). The
// forward draws each parallel chunk's mask with bernoulli_draws
// (core/random_bulk.h: 64 draws per AVX-512 pass, the same stream as the
// formulas' one Philox block per index), then scales x through it; the
// backward is the elementwise map of ops/dropout_formulas.h.
#include "core/copy.h"
#include "core/parallel.h"
#include "core/random_bulk.h"
#include "ops/cpu/loops.h"
#include "ops/dropout_formulas.h"

namespace ks::cpu {

namespace {

constexpr int64_t kGrain = 8192;  // elements per parallel chunk

void dropout_forward(const Tensor& out, const Tensor& mask, const Tensor& x_in, double keep, double scale,
                     uint64_t seed, uint64_t first_block) {
  const int64_t n = out.numel();
  if (n == 0) return;
  const Tensor x = contiguous_raw(x_in);
  dispatch_floating16(x.dtype(), "dropout", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;  // 16-bit: scaled in float32, rounded once
    T* o = out.data<T>();
    bool* m = mask.data<bool>();
    const uint8_t* m_bytes = reinterpret_cast<const uint8_t*>(m);  // read as bytes: see MaskedScale
    const T* xs = x.data<T>();
    const dropout_formulas::MaskedScale<C> apply{C(scale)};
    parallel_for(0, n, kGrain, [&](int64_t begin, int64_t end) {
      bernoulli_draws(m + begin, end - begin, seed, first_block, uint64_t(begin), keep);
      for (int64_t i = begin; i < end; ++i) o[i] = T(apply(static_cast<C>(xs[i]), m_bytes[i]));
    });
  });
}

[[maybe_unused]] const bool dropout_kernels_registered = [] {
  dropout_kernel.set(DeviceType::CPU, dropout_forward);
  dropout_backward_kernel.set(DeviceType::CPU, dropout_formulas::dropout_kernels<CpuLoops>::backward);
  return true;
}();

}  // namespace

}  // namespace ks::cpu
