// core/random_bulk.cpp — bernoulli_draws (random_bulk.h): the scalar
// definition at the ends of a range, and 16 Philox blocks at a time in
// AVX-512 registers between them.
#include "core/random_bulk.h"

// GCC 12's masked AVX-512 intrinsics pass _mm512_undefined_epi32() as the
// unused source, which -Wmaybe-uninitialized reports (GCC bug 105593).
#if !defined(__clang__)  // a GCC-only warning
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <cmath>

#include "core/cpu_features.h"
#include "core/random_values.h"

namespace ks {

namespace {

constexpr int64_t kPerBlock = 4;                  // draws per Philox block
constexpr int64_t kLanes = 16;                    // Philox blocks per AVX-512 pass
constexpr int64_t kPerPass = kPerBlock * kLanes;  // draws per pass

// (hi, lo) of the 32 × 32 → 64-bit products a_i · m in each 32-bit lane.
__attribute__((target("avx512f"), always_inline)) inline void mul_wide(__m512i a, __m512i m, __m512i& hi, __m512i& lo) {
  const __m512i even = _mm512_mul_epu32(a, m);                        // lanes 0, 2, ... as 64-bit products
  const __m512i odd = _mm512_mul_epu32(_mm512_srli_epi64(a, 32), m);  // lanes 1, 3, ...
  hi = _mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64(even, 32), odd);
  lo = _mm512_mask_blend_epi32(0xAAAA, even, _mm512_slli_epi64(odd, 32));
}

// Draws 4b .. 4b+3 of blocks first_block + b for b in [0, 16 · passes),
// written to keep[0, 64 · passes). A draw (hi, lo) is kept when its 53-bit
// value u = hi·2^21 + (lo >> 11) is below t = t_hi·2^21 + t_lo.
__attribute__((target("avx512f"))) void draws_avx512(bool* keep, int64_t passes, uint64_t seed, uint64_t first_block,
                                                     uint32_t t_hi, uint32_t t_lo) {
  const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512i mul0 = _mm512_set1_epi32(int(0xD2511F53u)), mul1 = _mm512_set1_epi32(int(0xCD9E8D57u));
  const __m512i thi = _mm512_set1_epi32(int(t_hi)), tlo = _mm512_set1_epi32(int(t_lo));
  for (int64_t pass = 0; pass < passes; ++pass) {
    // The 64-bit counters first_block + 16·pass + lane, as (low, high) words.
    const uint64_t base = first_block + uint64_t(pass * kLanes);
    const __m512i base_lo = _mm512_set1_epi32(int(uint32_t(base)));
    __m512i c0 = _mm512_add_epi32(base_lo, lane);
    const __mmask16 carry = _mm512_cmplt_epu32_mask(c0, base_lo);
    const __m512i base_hi = _mm512_set1_epi32(int(uint32_t(base >> 32)));
    __m512i c1 = _mm512_mask_add_epi32(base_hi, carry, base_hi, _mm512_set1_epi32(1));
    __m512i c2 = _mm512_setzero_si512(), c3 = _mm512_setzero_si512();
    uint32_t k0 = uint32_t(seed), k1 = uint32_t(seed >> 32);
    for (int round = 0; round < 10; ++round) {  // philox4x32_10 (core/random.h), lane by lane
      __m512i hi0, lo0, hi1, lo1;
      mul_wide(c0, mul0, hi0, lo0);
      mul_wide(c2, mul1, hi1, lo1);
      const __m512i n0 = _mm512_xor_si512(_mm512_xor_si512(hi1, c1), _mm512_set1_epi32(int(k0)));
      const __m512i n2 = _mm512_xor_si512(_mm512_xor_si512(hi0, c3), _mm512_set1_epi32(int(k1)));
      c0 = n0;
      c1 = lo1;
      c2 = n2;
      c3 = lo0;
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    // Draw k of a block is (w_k, w_{k+1 mod 4}) (bernoulli_draw).
    const __m512i w[5] = {c0, c1, c2, c3, c0};
    __m512i bytes = _mm512_setzero_si512();
    for (int k = 0; k < 4; ++k) {
      const __mmask16 below = _mm512_cmplt_epu32_mask(w[k], thi);
      const __mmask16 tie = _mm512_cmpeq_epu32_mask(w[k], thi);
      const __mmask16 low_below = _mm512_cmplt_epu32_mask(_mm512_srli_epi32(w[k + 1], 11), tlo);
      const __mmask16 kept = below | (tie & low_below);
      // Byte k of each 32-bit lane: draw 4·lane + k, in memory order.
      bytes = _mm512_or_si512(bytes, _mm512_maskz_mov_epi32(kept, _mm512_set1_epi32(1 << (8 * k))));
    }
    _mm512_storeu_si512(keep + pass * kPerPass, bytes);
  }
}

}  // namespace

void bernoulli_draws_scalar(bool* keep, int64_t n, uint64_t seed, uint64_t first_block, uint64_t idx0, double p_one) {
  int64_t c = 0;
  while (c < n) {
    const uint64_t idx = idx0 + uint64_t(c);
    uint32_t w[4];
    philox4x32_10(seed, 0, first_block + idx / kPerBlock, w);
    for (int k = int(idx % kPerBlock); k < kPerBlock && c < n; ++k, ++c) keep[c] = bernoulli_draw(w, k, p_one);
  }
}

void bernoulli_draws(bool* keep, int64_t n, uint64_t seed, uint64_t first_block, uint64_t idx0, double p_one) {
  static const bool vector = cpu_features().avx512;
  // The threshold t = ceil(p_one·2^53) fits the two-word compare for p_one
  // in (0, 1); 0, 1 and NaN are the scalar path's (all or nothing).
  if (!vector || !(p_one > 0 && p_one < 1) || n < kPerPass)
    return bernoulli_draws_scalar(keep, n, seed, first_block, idx0, p_one);
  const int64_t head = int64_t((kPerBlock - idx0 % kPerBlock) % kPerBlock);  // up to the next block
  bernoulli_draws_scalar(keep, head, seed, first_block, idx0, p_one);
  const int64_t passes = (n - head) / kPerPass;
  const uint64_t t = uint64_t(std::ceil(std::ldexp(p_one, 53)));  // exact: p_one·2^53 is a double
  draws_avx512(keep + head, passes, seed, first_block + (idx0 + uint64_t(head)) / kPerBlock, uint32_t(t >> 21),
               uint32_t(t & ((1u << 21) - 1)));
  const int64_t done = head + passes * kPerPass;
  bernoulli_draws_scalar(keep + done, n - done, seed, first_block, idx0 + uint64_t(done), p_one);
}

}  // namespace ks
