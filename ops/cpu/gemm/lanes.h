// ops/cpu/gemm/lanes.h — the one order in which the few-row kernels add the 16
// float32 lanes of an output's sum (gemv.cpp, q8_0.cpp): lane l + lane l+8,
// then + 4, + 2, + 1. Their AVX-512 kernels (one 16-lane register, split in
// halves), AVX2 kernels (two 8-lane halves) and portable ones all end here,
// so they give the same bits. Internal to this folder.
// Not here: the kernels themselves.
#pragma once

#include <immintrin.h>

namespace ks::cpu::lanes {

// The sum of 16 lanes given as two halves (lanes 0–7, 8–15).
[[gnu::always_inline]] inline __attribute__((target("avx2,fma"))) float add16(__m256 lo, __m256 hi) {
  const __m256 s8 = _mm256_add_ps(lo, hi);
  const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
  const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  const __m128 s1 = _mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1));
  return _mm_cvtss_f32(s1);
}

// The same for 16 lanes in an array, without vector instructions.
inline float add16(const float* lane) {
  float s8[8], s4[4], s2[2];
  for (int l = 0; l < 8; ++l) s8[l] = lane[l] + lane[l + 8];
  for (int l = 0; l < 4; ++l) s4[l] = s8[l] + s8[l + 4];
  for (int l = 0; l < 2; ++l) s2[l] = s4[l] + s4[l + 2];
  return s2[0] + s2[1];
}

}  // namespace ks::cpu::lanes
