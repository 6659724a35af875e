// core/random_values.h — how one Philox block becomes the values of a random
// fill, for every RandomKind: the one recipe the CPU kernel (factory.cpp) and
// the CUDA kernel (cuda/copy.cu) both call, so a seed gives the same tensor
// on every device.
//
// Products and sums that feed a result are written as explicit fma calls:
// host and device compilers contract `a + b * c` by their own rules, fma is
// one correctly rounded operation everywhere. Uniform, Bernoulli and integer
// draws are therefore bitwise equal across devices; normals go through
// log/cos/sin, whose last bit may differ between glibc and CUDA's libdevice
// (float64 agrees to ~1e-15 relative, float32 almost always exactly).
// Not here: the kernels' loops, the Generator (random.h).
#pragma once

#include <cmath>

#include "core/factory.h"
#include "core/host_device.h"
#include "core/random.h"

namespace ks {

// Draw k (0..3) of a Bernoulli(p_one) Philox block w: true with probability
// p_one. Dropout masks use this same draw, so a seed gives the same mask from
// bernoulli() and from dropout() on every device.
KS_HOST_DEVICE inline bool bernoulli_draw(const uint32_t w[4], int k, double p_one) {
  return uniform_double(w[k], w[(k + 1) % 4]) < p_one;
}

// Element i of a Bernoulli(p_one) stream whose element 0 is draw 0 of Philox
// block first_block: for kernels that visit elements out of block order.
KS_HOST_DEVICE inline bool bernoulli_element(uint64_t seed, uint64_t first_block, uint64_t i, double p_one) {
  uint32_t w[4];
  philox4x32_10(seed, 0, first_block + i / 4, w);
  return bernoulli_draw(w, int(i % 4), p_one);
}

// Writes the `per` values of Philox block `block` (random_values_per_block)
// into vals[0, per).
KS_HOST_DEVICE inline void random_block_values(const RandomSpec& s, int per, uint64_t block, double vals[4]) {
  uint32_t w[4];
  philox4x32_10(s.seed, 0, s.first_block + block, w);
  switch (s.kind) {
    case RandomKind::Normal: {
      // Box–Muller on two uniforms; 1 - u1 is in (0, 1], so the log is finite.
      const double u1 = uniform_double(w[0], w[1]), u2 = uniform_double(w[2], w[3]);
      const double r = std::sqrt(-2.0 * std::log(1.0 - u1));
      const double th = 6.283185307179586 * u2;
      vals[0] = std::fma(s.b, r * std::cos(th), s.a);
      vals[1] = std::fma(s.b, r * std::sin(th), s.a);
      break;
    }
    case RandomKind::Uniform:
      if (per == 4)
        for (int k = 0; k < 4; ++k) vals[k] = std::fma(s.b - s.a, double(uniform_float(w[k])), s.a);
      else
        for (int k = 0; k < 2; ++k) vals[k] = std::fma(s.b - s.a, uniform_double(w[2 * k], w[2 * k + 1]), s.a);
      break;
    case RandomKind::Bernoulli:
      for (int k = 0; k < 4; ++k) vals[k] = bernoulli_draw(w, k, s.a) ? 1.0 : 0.0;
      break;
    case RandomKind::IntRange: {
      const uint64_t range = uint64_t(s.b - s.a);
      for (int k = 0; k < 4; ++k) {
        const uint64_t x = uint64_t(w[k]) << 32 | w[(k + 1) % 4];
        vals[k] = s.a + double(x % range);
      }
      break;
    }
  }
}

}  // namespace ks
