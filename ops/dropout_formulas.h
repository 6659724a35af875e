// ops/dropout_formulas.h — the dropout kernels of ops/dropout.h, written once
// over the backend's loops (CpuLoops, CudaLoops): the forward runs one Philox
// block of 4 elements per index (a thread per block on the GPU), so it draws
// the mask of bernoulli_draw (core/random_values.h); the backward is an
// elementwise map. The GPU registers both. The CPU registers the backward and
// its own forward (ops/cpu/dropout.cpp), which draws the same mask 64 draws
// at a time (core/random_bulk.h); the tests check it against this forward run
// on the CPU's loops, bit for bit. Not here: the checks and the generator
// (ops/dropout.cpp).
#pragma once

#include <cstdint>

#include "core/copy.h"
#include "core/dtype.h"
#include "core/host_device.h"
#include "core/random_values.h"
#include "core/tensor.h"
#include "ops/dropout.h"
#include "ops/kernel_dtypes.h"

namespace ks::dropout_formulas {

// v·scale where the element was kept, else 0: the forward's x and the
// backward's g. The mask is read as bytes: GCC 12 vectorises no loop that
// loads bool, and on a dropout mask a branch per element mispredicts about
// as often as p. The product is formed first, so the select is branch-free.
template <class T> struct MaskedScale {
  T scale;
  KS_HOST_DEVICE T operator()(T v, uint8_t kept) const {
    const T scaled = T(v * scale);
    return kept ? scaled : T(0);
  }
};

// Elements 4b .. 4b+3 (those below n): kept with probability keep, then
// out = x·scale, else 0; mask records the draw. x, out, mask contiguous.
// S is the stored type; a 16-bit element is scaled in float32 and rounded once.
template <class S> struct DropoutBlock {
  using T = compute_t<S>;
  S* out;
  bool* mask;
  const S* x;
  int64_t n;
  double keep;
  T scale;
  uint64_t seed, first_block;

  KS_HOST_DEVICE void operator()(int64_t b) const {
    uint32_t w[4];
    philox4x32_10(seed, 0, first_block + uint64_t(b), w);
    for (int k = 0; k < 4; ++k) {
      const int64_t i = b * 4 + k;
      if (i >= n) break;
      const bool kept = bernoulli_draw(w, k, keep);
      mask[i] = kept;
      out[i] = S(MaskedScale<T>{scale}(widen(x[i]), kept));
    }
  }
};

constexpr int64_t kBlockGrain = 2048;  // Philox blocks per parallel chunk where a CPU runs forward()

// The dropout kernels of ops/dropout.h for the backend whose loops are Loops.
template <class Loops> struct dropout_kernels {
  static void forward(const Tensor& out, const Tensor& mask, const Tensor& x_in, double keep, double scale,
                      uint64_t seed, uint64_t first_block) {
    const int64_t n = out.numel();
    if (n == 0) return;
    const Tensor x = contiguous_raw(x_in);
    dispatch_floating_on<Loops>(x.dtype(), "dropout", [&](auto tag) {
      using S = typename decltype(tag)::type;
      const compute_t<S> scaled_by = compute_t<S>(scale);
      const DropoutBlock<S> block{out.data<S>(), mask.data<bool>(), x.data<S>(), n, keep, scaled_by, seed, first_block};
      Loops::for_each_index(x.device(), (n + 3) / 4, kBlockGrain, block);
    });
  }

  static void backward(const Tensor& dx, const Tensor& g, const Tensor& mask, double scale) {
    dispatch_floating_on<Loops>(dx.dtype(), "dropout backward", [&](auto tag) {
      using S = typename decltype(tag)::type;
      using T = compute_t<S>;
      Loops::template map<S, S, uint8_t>(widened<S, S, uint8_t>(MaskedScale<T>{T(scale)}), dx,
                                         {g, mask});  // bool's bytes
    });
  }
};

// Registers dropout_kernels<Loops> as `device`'s kernels of ops/dropout.h.
template <class Loops> bool register_dropout_kernels(DeviceType device) {
  dropout_kernel.set(device, dropout_kernels<Loops>::forward);
  dropout_backward_kernel.set(device, dropout_kernels<Loops>::backward);
  return true;
}

}  // namespace ks::dropout_formulas
