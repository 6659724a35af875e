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

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

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

// max_i x[i]; -inf for an empty row. NaNs are skipped here, but they still
// reach the result through the sums that follow every use.
template <class T>
inline T row_max(const T* x, int64_t n) {
  constexpr T ninf = -std::numeric_limits<T>::infinity();
  T m[kLanes];
  for (int k = 0; k < kLanes; ++k) m[k] = ninf;
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int k = 0; k < kLanes; ++k) m[k] = x[i + k] > m[k] ? x[i + k] : m[k];
  T r = ninf;
  for (; i < n; ++i) r = x[i] > r ? x[i] : r;
  for (int k = 0; k < kLanes; ++k) r = m[k] > r ? m[k] : r;
  return r;
}

// exp(x) for float without a library call, so loops over it vectorise:
// Cody–Waite reduction x = k·ln2 + r, |r| ≤ ln2/2, and Cephes' degree-6
// polynomial for e^r (within 2 ulp of std::exp). Inputs below -87.33 (where
// exp leaves the normal range) give exactly 0, so exp(-inf) = 0; inputs
// above 88 are clamped (callers pass x - max ≤ 0). NaN stays NaN.
inline float vexp(float x) {
  constexpr float lo = -87.33654475f, hi = 88.0f;
  float xc = x < lo ? lo : x;
  xc = xc > hi ? hi : xc;
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
  const float scale = std::bit_cast<float>((k + 127u) << 23);  // 2^k, k in [-126, 127]
  const float y = p * scale;
  return x < lo ? 0.0f : y;
}
// float64 rows serve gradchecks and references: the library exp is exact enough and fast enough.
inline double vexp(double x) { return std::exp(x); }

}  // namespace ks::cpu
