// ops/cpu/row_math.h — the building blocks of the fused row kernels
// (softmax, log_softmax, layer_norm, cross_entropy, mse_loss): reductions
// over a contiguous row. Their exp is vmath::exp (vec_math.h).
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

#include "ops/cpu/avx512_clone.h"
#include "ops/vec_math.h"

namespace ks::cpu {

constexpr int kLanes = 8;

// Σ f(i) for i in [0, n), accumulated in Acc (double for float32 rows).
template <class Acc, class F> KS_ROWS_INLINE Acc lane_sum(int64_t n, F&& f) {
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
template <class T> KS_ROWS_INLINE T row_max(const T* x, int64_t n) {
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

}  // namespace ks::cpu
