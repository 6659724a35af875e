// ops/cpu/gemm/avx512bf16.cpp — the AVX512-BF16 block kernel of
// ops/cpu/gemm/packed.h, for CPUs with vdpbf16ps but no AMX.
//
// A (32, 32) block in four groups of 8 rows: per group 16 zmm accumulators
// (8 rows × 2 panels of 16 float32). Per k pair: the two panels' rows (32
// bf16 each, one load per panel) and, per row, the row's (k, k+1) bf16 pair
// broadcast to all lanes; vdpbf16ps adds a[k]·b[k] + a[k+1]·b[k+1] into
// each float32 lane.
// Compiled for AVX512-BF16 by function attribute only.
// Not here: packing (pack.cpp), blocking, the float32 write-back (bf16.cpp).
#include <immintrin.h>

#include <cstring>

#include "ops/cpu/gemm/packed.h"

namespace ks::cpu::bf16 {

__attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16"))) void avx512bf16_block(
    const uint16_t* a, int64_t lda_p, const uint16_t* b0, const uint16_t* b1, int64_t kc, float* c, int64_t ldc,
    const float* c_in, int64_t ldc_in, const NextBlock&) {
  constexpr int kRows = 8;
  for (int64_t g = 0; g < kBlock; g += kRows) {
    __m512 acc0[kRows], acc1[kRows];
    for (int r = 0; r < kRows; ++r) {
      acc0[r] = c_in ? _mm512_loadu_ps(c_in + (g + r) * ldc_in) : _mm512_setzero_ps();
      acc1[r] = c_in ? _mm512_loadu_ps(c_in + (g + r) * ldc_in + kPanel) : _mm512_setzero_ps();
    }
    const uint16_t* ag = a + g * lda_p;
    for (int64_t k = 0; k < kc; k += 2) {
      const __m512bh p0 = (__m512bh)_mm512_loadu_si512(b0 + k * kPanel);  // row k/2 of each panel
      const __m512bh p1 = (__m512bh)_mm512_loadu_si512(b1 + k * kPanel);
      for (int r = 0; r < kRows; ++r) {
        uint32_t pair;
        std::memcpy(&pair, ag + r * lda_p + k, sizeof pair);
        const __m512bh x = (__m512bh)_mm512_set1_epi32(int(pair));
        acc0[r] = _mm512_dpbf16_ps(acc0[r], x, p0);
        acc1[r] = _mm512_dpbf16_ps(acc1[r], x, p1);
      }
    }
    for (int r = 0; r < kRows; ++r) {
      _mm512_storeu_ps(c + (g + r) * ldc, acc0[r]);
      _mm512_storeu_ps(c + (g + r) * ldc + kPanel, acc1[r]);
    }
  }
}

}  // namespace ks::cpu::bf16
