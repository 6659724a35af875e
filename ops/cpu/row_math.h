// ops/cpu/row_math.h — the building blocks of the fused row kernels
// (softmax, log_softmax, layer_norm, cross_entropy, mse_loss): reductions
// over a contiguous row and an exp that the compiler can vectorise.
//
// Without -ffast-math the compiler will not reorder a floating-point
// reduction, so a plain `acc += x[i]` loop runs one add at a time. These
// helpers keep kLanes independent accumulators, which the SLP vectoriser maps
// onto SIMD registers; the order of additions is fixed by n alone, so results
// do not depend on threads. This file holds no kernels and no dispatch.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace ks::cpu {

constexpr int kLanes = 8;

// Σ f(i) for i in [0, n), accumulated in Acc (double for float32 rows).
template <class Acc, class F>
inline Acc lane_sum(int64_t n, F&& f) {
  Acc acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int k = 0; k < kLanes; ++k) acc[k] += Acc(f(i + k));
  Acc tail = 0;
  for (; i < n; ++i) tail += Acc(f(i));
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7])) + tail;
}

// max_i x[i]; -inf for an empty row. Compared as integers: a float's bits,
// with the magnitude bits flipped for negatives, order like the float, and
// integer max reductions vectorise where float ones (NaN rules) do not. NaN
// may or may not win; every caller lets it reach the result through a sum.
template <class T>
inline T row_max(const T* x, int64_t n) {
  using I = std::conditional_t<sizeof(T) == 4, int32_t, int64_t>;
  constexpr I flip = std::numeric_limits<I>::max();
  auto key = [](I b) { return b ^ ((b >> (sizeof(I) * 8 - 1)) & flip); };  // its own inverse
  I m[kLanes];
  for (int k = 0; k < kLanes; ++k) m[k] = key(std::bit_cast<I>(-std::numeric_limits<T>::infinity()));
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int k = 0; k < kLanes; ++k) m[k] = std::max(m[k], key(std::bit_cast<I>(x[i + k])));
  for (; i < n; ++i) m[0] = std::max(m[0], key(std::bit_cast<I>(x[i])));
  for (int k = 1; k < kLanes; ++k) m[0] = std::max(m[0], m[k]);
  return std::bit_cast<T>(key(m[0]));
}

// exp(x) for float without a library call, so loops over it vectorise:
// Cody–Waite reduction x = k·ln2 + r, |r| ≤ ln2/2, and Cephes' degree-6
// polynomial for e^r (within 2 ulp of std::exp). Inputs below -87.33 (where
// exp leaves the normal range) give exactly 0, so exp(-inf) = 0; inputs
// above 88 are clamped (callers pass x - max ≤ 0). NaN stays NaN.
// The range checks are done on the bits with masks: written as float
// comparisons, GCC turns them into branches (it folds the clamped path to a
// constant) and then cannot vectorise the loop without -fno-trapping-math.
inline float vexp(float x) {
  constexpr uint32_t lo = 0xC2AEAC50u;  // bits of -87.33654f; larger bits are more negative
  constexpr uint32_t hi = 0x42B00000u;  // bits of 88.0f
  constexpr uint32_t ninf = 0xFF800000u, pinf = 0x7F800000u;
  const uint32_t b = std::bit_cast<uint32_t>(x);
  const uint32_t below = 0u - uint32_t((b > lo) & (b <= ninf));  // x < -87.33, including -inf, but no NaN
  const uint32_t above = 0u - uint32_t((b > hi) & (b <= pinf));  // x > 88, including +inf, but no NaN
  const float xc = std::bit_cast<float>((b & ~(below | above)) | (lo & below) | (hi & above));
  // Adding 1.5·2^23 rounds x·log2(e) to an integer held in the low mantissa
  // bits: no float-to-int conversion (undefined for NaN) is needed.
  constexpr float magic = 12582912.0f;
  float kf = xc * 1.44269504088896341f + magic;
  // k in two's complement; unsigned so that a NaN's garbage k cannot overflow.
  const uint32_t k = std::bit_cast<uint32_t>(kf) - std::bit_cast<uint32_t>(magic);
  kf -= magic;
  float r = xc - kf * 0.693359375f;
  r = r - kf * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const float y = p * std::bit_cast<float>((k + 127u) << 23);  // · 2^k, k in [-126, 127]
  return std::bit_cast<float>(std::bit_cast<uint32_t>(y) & ~below);
}
// float64 rows serve gradchecks and references: the library exp is exact enough and fast enough.
inline double vexp(double x) { return std::exp(x); }

}  // namespace ks::cpu
