// ops/cpu/gemm/pack.cpp — rounding float32 operands to bfloat16 and
// packing them into the layouts of packed.h, with AVX-512 (every CPU with an
// AMX or AVX512-BF16 path has AVX-512F/BW): by ranges of rows and panels for
// the driver, whole operands for gemm.h's pack_a / pack_b.
//
// Rounding is ks::BFloat16's, bit for bit: nearest even on the integer
// pattern, NaN to 0x7fc0 (vcvtne2ps2bf16 would flush denormals instead).
// Four cases, each reading its source along memory:
//   A rows contiguous      convert 16 floats, store 16 bf16;
//   A rows strided (op(A) = Xᵀ): 16 × 16 blocks transposed in registers,
//                          then converted row by row;
//   B rows contiguous      rows k and k+1 converted and interleaved into one
//                          64-byte panel row;
//   B columns contiguous (op(B) = Wᵀ): per column 32 consecutive k become
//                          16 (k, k+1) pairs, and a 16 × 16 transpose of
//                          those pairs gives 16 panel rows.
// Edges (fewer than 16 rows, columns or k left) go element by element.
// pack_a_and_b is the third and first cases at once, from one read of g.
// pack_a_rows also reads bfloat16 sources (a linear layer's input saved in
// bf16, ops/linalg.cpp): their values are already bf16, so packing copies them.
// Not here: the kernels and the blocking (amx.cpp, avx512bf16.cpp, bf16.cpp).
#include <immintrin.h>

#include <algorithm>

#include "core/dtype.h"
#include "ops/cpu/gemm/packed.h"

#define KS_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl")))
// GCC 12 reports the "undefined" source operand inside its own AVX-512
// intrinsics as uninitialised when they are inlined into target-attribute
// functions; the warning is about the header, not this code.
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)  // a GCC-only warning
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace ks::cpu::bf16 {
namespace {

inline uint16_t to_bf16(float x) { return BFloat16(x).bits; }

// The rounded bfloat16 of each lane, in the lane's high 16 bits (low bits garbage).
KS_AVX512 inline __m512i rounded_high(__m512 x) {
  const __m512i u = _mm512_castps_si512(x);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  const __m512i r = _mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff)));
  const __mmask16 nan =
      _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)), _mm512_set1_epi32(0x7f800000));
  return _mm512_mask_mov_epi32(r, nan, _mm512_set1_epi32(0x7fc00000));
}
// 16 floats to 16 bf16.
KS_AVX512 inline __m256i to_bf16x16(__m512 x) { return _mm512_cvtepi32_epi16(_mm512_srli_epi32(rounded_high(x), 16)); }

// Rows of r transposed in place: r[i] lane j <-> r[j] lane i.
KS_AVX512 void transpose16(__m512 r[16]) {
  __m512 t[16];
  for (int i = 0; i < 16; i += 4) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    t[i + 2] = _mm512_unpacklo_ps(r[i + 2], r[i + 3]);
    t[i + 3] = _mm512_unpackhi_ps(r[i + 2], r[i + 3]);
  }
  for (int i = 0; i < 16; i += 4) {
    r[i] = _mm512_shuffle_ps(t[i], t[i + 2], 0x44);
    r[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], 0xEE);
    r[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    r[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
  }
  for (int i = 0; i < 4; ++i) {
    t[i] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0x88);
    t[i + 4] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0xdd);
    t[i + 8] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0x88);
    t[i + 12] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0xdd);
  }
  for (int i = 0; i < 8; ++i) {
    r[i] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88);
    r[i + 8] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0xdd);
  }
}

// 16 values as floats: float32 loaded, bfloat16 widened (exactly; rounding it again changes no bit).
KS_AVX512 inline __m512 load16(const float* p) { return _mm512_loadu_ps(p); }
KS_AVX512 inline __m512 load16(const BFloat16* p) {
  const __m512i wide = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  return _mm512_castsi512_ps(_mm512_slli_epi32(wide, 16));
}

}  // namespace

// A function template does not take GCC's target attribute reliably (its
// instantiations compiled without AVX-512 here), so the target is set around
// it; clang ignores GCC's pragma and has its own.
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512vl"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl")
#endif
template <class Src>
void pack_a_rows(const GemmMatrix<Src>& op_a, int64_t m, int64_t k, int64_t kp, int64_t r0, int64_t r1, uint16_t* out) {
  const Src* const a = op_a.data;
  const bool transposed = op_a.transposed;
  const int64_t lda = op_a.ld;
  const int64_t k16 = k / 16 * 16;
  int64_t i = r0;
  if (transposed) {  // element (i, c) at a[c·lda + i]
    // Bands of up to 256 rows: each step reads 16 memory rows of 1 KiB, not
    // 16 lines scattered over 16 pages per 16 × 16 block.
    constexpr int64_t kBand = 256;
    const int64_t full_end = r0 + (std::min(r1, m) - r0) / 16 * 16;
    for (int64_t band = r0; band < full_end; band += kBand) {
      const int64_t band_end = std::min(band + kBand, full_end);
      for (int64_t c = 0; c < k16; c += 16)
        for (int64_t g = band; g < band_end; g += 16) {
          __m512 r[16];
          for (int j = 0; j < 16; ++j) r[j] = load16(a + (c + j) * lda + g);  // column c+j, rows g..g+15
          transpose16(r);                                                     // r[row] = columns c..c+15
          for (int j = 0; j < 16; ++j) _mm256_storeu_si256((__m256i*)(out + (g + j) * kp + c), to_bf16x16(r[j]));
        }
      for (int64_t g = band; g < band_end; ++g) {
        uint16_t* row = out + g * kp;
        for (int64_t c = k16; c < k; ++c) row[c] = to_bf16(float(a[c * lda + g]));
        std::fill(row + k, row + kp, uint16_t(0));
      }
    }
    i = full_end;
  }
  for (; i < r1; ++i) {
    uint16_t* row = out + i * kp;
    if (i >= m) {
      std::fill(row, row + kp, uint16_t(0));
      continue;
    }
    if (transposed) {
      for (int64_t c = 0; c < k; ++c) row[c] = to_bf16(float(a[c * lda + i]));
    } else {
      const Src* src = a + i * lda;
      int64_t c = 0;
      for (; c < k16; c += 16) _mm256_storeu_si256((__m256i*)(row + c), to_bf16x16(load16(src + c)));
      for (; c < k; ++c) row[c] = to_bf16(float(src[c]));
    }
    std::fill(row + k, row + kp, uint16_t(0));
  }
}

template void pack_a_rows(const GemmMatrix<float>&, int64_t, int64_t, int64_t, int64_t, int64_t, uint16_t*);
template void pack_a_rows(const GemmMatrix<BFloat16>&, int64_t, int64_t, int64_t, int64_t, int64_t, uint16_t*);
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

KS_AVX512 void pack_b_panels(const GemmMatrix<float>& op_b, int64_t k, int64_t n, int64_t kp, int64_t p0, int64_t p1,
                             uint16_t* out) {
  const float* const b = op_b.data;
  const bool transposed = op_b.transposed;
  const int64_t ldb = op_b.ld;
  const __m512i high_halves = _mm512_set_epi16(63, 61, 59, 57, 55, 53, 51, 49, 47, 45, 43, 41, 39, 37, 35, 33, 31, 29,
                                               27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
  const __m512i low16 = _mm512_set1_epi32(0xffff);
  const int64_t full_end = std::min(p1, n / kPanel);  // panels with 16 real columns
  if (!transposed && p0 < full_end) {  // element (r, c) at b[r·ldb + c]: row pairs outside, panels inside
    for (int64_t r = 0; r + 2 <= k; r += 2)
      for (int64_t p = p0; p < full_end; ++p) {
        const float* src = b + r * ldb + p * kPanel;
        const __m512i lo = _mm512_srli_epi32(rounded_high(_mm512_loadu_ps(src)), 16);
        const __m512i hi = _mm512_andnot_si512(low16, rounded_high(_mm512_loadu_ps(src + ldb)));
        _mm512_storeu_si512(out + p * kp * kPanel + r * kPanel, _mm512_or_si512(lo, hi));
      }
  }
  for (int64_t p = p0; p < p1; ++p) {
    uint16_t* panel = out + p * kp * kPanel;
    const int64_t n0 = p * kPanel, cols = std::clamp<int64_t>(n - n0, 0, kPanel);
    auto at = [&](int64_t r, int64_t c) { return transposed ? b[(n0 + c) * ldb + r] : b[r * ldb + n0 + c]; };
    int64_t r = 0;  // k rows done by the vector loops
    if (cols == kPanel && !transposed) {
      r = k / 2 * 2;              // done above
    } else if (cols == kPanel) {  // element (r, c) at b[(n0 + c)·ldb + r]
      for (; r + 32 <= k; r += 32) {
        __m512 pairs[16];  // pairs[c] lane t = (k = r+2t, r+2t+1) of column c
        for (int c = 0; c < 16; ++c) {
          const float* src = b + (n0 + c) * ldb + r;
          const __m512i x = rounded_high(_mm512_loadu_ps(src)), y = rounded_high(_mm512_loadu_ps(src + 16));
          pairs[c] = _mm512_castsi512_ps(_mm512_permutex2var_epi16(x, high_halves, y));
        }
        transpose16(pairs);  // pairs[t] lane c: panel row r/2 + t
        for (int t = 0; t < 16; ++t) _mm512_storeu_ps((float*)(panel + (r + 2 * t) * kPanel), pairs[t]);
      }
    }
    // what is left: a partial panel, the last k rows, and the zero padding
    for (int64_t rr = r; rr < kp; ++rr)
      for (int64_t c = 0; c < kPanel; ++c)
        panel[(rr / 2) * 2 * kPanel + 2 * c + (rr % 2)] = rr < k && c < cols ? to_bf16(at(rr, c)) : uint16_t(0);
  }
}

KS_AVX512 void pack_a_and_b(const float* g, int64_t ldg, int64_t m, int64_t n, int64_t ka, int64_t kp_b, int64_t r0,
                            int64_t r1, uint16_t* a_out, uint16_t* b_out, float* col_sums) {
  const __m512i low16 = _mm512_set1_epi32(0xffff);
  const int64_t n16 = n / 16 * 16, np = round_up(n, kBlock);
  for (int64_t r = r0; r < r1; r += 2) {
    const bool real0 = r < m, real1 = r + 1 < m;
    const float* x0 = real0 ? g + r * ldg : nullptr;
    const float* x1 = real1 ? g + (r + 1) * ldg : nullptr;
    uint16_t* a0 = a_out ? a_out + r * ka : nullptr;
    uint16_t* a1 = a_out ? a0 + ka : nullptr;
    uint16_t* b_pair = b_out ? b_out + r * kPanel : nullptr;  // panel row r/2 of panel 0
    int64_t c = 0;
    for (; c < n16; c += 16) {
      const __m512 v0 = x0 ? _mm512_loadu_ps(x0 + c) : _mm512_setzero_ps();
      const __m512 v1 = x1 ? _mm512_loadu_ps(x1 + c) : _mm512_setzero_ps();
      const __m512i h0 = rounded_high(v0), h1 = rounded_high(v1);
      if (a0) {
        _mm256_storeu_si256((__m256i*)(a0 + c), _mm512_cvtepi32_epi16(_mm512_srli_epi32(h0, 16)));
        _mm256_storeu_si256((__m256i*)(a1 + c), _mm512_cvtepi32_epi16(_mm512_srli_epi32(h1, 16)));
      }
      if (b_pair)
        _mm512_storeu_si512(b_pair + (c / kPanel) * kp_b * kPanel,
                            _mm512_or_si512(_mm512_srli_epi32(h0, 16), _mm512_andnot_si512(low16, h1)));
      if (col_sums) _mm512_storeu_ps(col_sums + c, _mm512_add_ps(_mm512_loadu_ps(col_sums + c), _mm512_add_ps(v0, v1)));
    }
    // the last partial panel and B's zero columns up to a multiple of 32
    for (; c < np; ++c) {
      const float v0 = x0 && c < n ? x0[c] : 0.f, v1 = x1 && c < n ? x1[c] : 0.f;
      if (a0 && c < n) a0[c] = to_bf16(v0), a1[c] = to_bf16(v1);
      if (b_pair) {
        uint16_t* pair = b_pair + (c / kPanel) * kp_b * kPanel + 2 * (c % kPanel);
        pair[0] = to_bf16(v0);
        pair[1] = to_bf16(v1);
      }
      if (col_sums && c < n) col_sums[c] += v0 + v1;
    }
    if (a0) {
      std::fill(a0 + n, a0 + ka, uint16_t(0));
      std::fill(a1 + n, a1 + ka, uint16_t(0));
    }
  }
}

PackedA pack_a(const GemmMatrix<float>& a, int64_t m, int64_t k, uint16_t* out) {
  const int64_t ld = packed_a_ld(k);
  pack_a_rows(a, m, k, ld, 0, padded(m), out);
  return {.data = out, .ld = ld};
}

PackedB pack_b(const GemmMatrix<float>& b, int64_t k, int64_t n, uint16_t* out) {
  const int64_t kp = padded(k);
  pack_b_panels(b, k, n, kp, 0, padded(n) / kPanel, out);
  return {.data = out, .kp = kp};
}

KS_AVX512 void store_transposed(const float* src, int64_t lds, int64_t rows, int64_t cols, float alpha, float beta,
                                float* dst, int64_t ldd) {
  const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
  const int64_t rows16 = rows / 16 * 16, cols16 = cols / 16 * 16;
  for (int64_t i = 0; i < rows16; i += 16)
    for (int64_t j = 0; j < cols16; j += 16) {
      __m512 r[16];
      for (int t = 0; t < 16; ++t) r[t] = _mm512_loadu_ps(src + (i + t) * lds + j);
      transpose16(r);  // r[t] = column j + t of the block: destination row j + t
      for (int t = 0; t < 16; ++t) {
        float* d = dst + (j + t) * ldd + i;
        const __m512 x = _mm512_mul_ps(va, r[t]);
        _mm512_storeu_ps(d, beta == 0 ? x : _mm512_fmadd_ps(vb, _mm512_loadu_ps(d), x));
      }
    }
  // the edges, element by element
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = (i < rows16 ? cols16 : 0); j < cols; ++j) {
      float& d = dst[j * ldd + i];
      d = beta == 0 ? alpha * src[i * lds + j] : alpha * src[i * lds + j] + beta * d;
    }
}

}  // namespace ks::cpu::bf16
