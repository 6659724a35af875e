// core/bf16_simd.h — BFloat16's rounding (core/dtype.h: to nearest, ties to
// even) on 16 or 8 float32 lanes at once, for the kernels that round in
// registers: core/copy.cpp packs the result to 16 bits, ops/cpu/gemm/gemv.cpp
// keeps it in float32 as a GEMM operand. The two differ only in what they
// make of a NaN lane, so that choice stays with them.
// Not here: the choice of instruction set (each caller checks cpu_features()
// and carries its own target attributes, a superset of these), or any other
// conversion.
#pragma once

#include <immintrin.h>

namespace ks::bf16_simd {

#define KS_BF16_SIMD_AVX512 [[gnu::always_inline]] inline __attribute__((target("avx512f")))
#define KS_BF16_SIMD_AVX2 [[gnu::always_inline]] inline __attribute__((target("avx2")))

// The float32 bits u plus the rounding bias: the top 16 bits of the sum are
// u rounded to bf16 (nearest, ties to even: 0x7fff, plus one when the kept
// part is odd). Meaningless in NaN lanes (nan_lanes).
KS_BF16_SIMD_AVX512 __m512i with_rounding_bias(__m512i u) {
  const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  return _mm512_add_epi32(u, _mm512_add_epi32(_mm512_set1_epi32(0x7fff), odd));
}
KS_BF16_SIMD_AVX2 __m256i with_rounding_bias(__m256i u) {
  const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  return _mm256_add_epi32(u, _mm256_add_epi32(_mm256_set1_epi32(0x7fff), odd));
}

// The lanes of u that hold a NaN (|u| above infinity's bits).
KS_BF16_SIMD_AVX512 __mmask16 nan_lanes(__m512i u) {
  return _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)), _mm512_set1_epi32(0x7f800000));
}
// All ones in a NaN lane. |u| as a signed int is at most 0x7fffffff, so the
// signed compare is the unsigned one.
KS_BF16_SIMD_AVX2 __m256i nan_lanes(__m256i u) {
  return _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff)), _mm256_set1_epi32(0x7f800000));
}

#undef KS_BF16_SIMD_AVX512
#undef KS_BF16_SIMD_AVX2

}  // namespace ks::bf16_simd
