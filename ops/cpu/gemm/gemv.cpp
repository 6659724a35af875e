// ops/cpu/gemm/gemv.cpp — the few-row product's kernels (gemv.h): four of
// B's rows at a time (read from memory once, then from L1) against the rows
// of a, four at a time in 16 accumulators with AVX-512, one at a time
// otherwise; 16 float32 lanes per output, in 512-bit registers or as two
// 256-bit halves, the same operations in the same order, and the lanes
// added in one tree; under round_bf16 each element of B rounded to bf16 as
// it is loaded. A B stored in bf16 (b16) is widened as it is loaded: the same
// products as a float32 B holding those values under round_bf16, from half
// the bytes.
// Not here: the choice between this and OpenBLAS (gemm.cpp's few_rows_kernel).
#include "ops/cpu/gemm/gemv.h"

// GCC 12's AVX-512 intrinsics pass _mm512_undefined_epi32() as an unused
// source, which -Wmaybe-uninitialized reports (GCC bug 105593).
#if !defined(__clang__)  // a GCC-only warning
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <algorithm>
#include <type_traits>
#include <vector>

#include "core/bf16_simd.h"
#include "core/cpu_features.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/parallel.h"
#include "ops/cpu/gemm/lanes.h"

namespace ks::cpu {
namespace {

#define KS_GEMV_AVX2 __attribute__((target("avx2,fma")))
#define KS_GEMV_AVX512 __attribute__((target("avx2,fma,avx512f,avx512bw,avx512dq,avx512vl")))

constexpr int64_t kRows = 4;  // rows per step: four independent FMA chains hide their latency
// Below this many multiply-adds the product stays on the calling thread: a
// oneTBB hand-off costs a few microseconds, a 64K-element row block about as much.
constexpr int64_t kThreadedGemv = int64_t(1) << 17;

// The sum of 16 lanes given as two halves: lanes.h's one order, so that the kernels' bits agree.
[[gnu::always_inline]] inline KS_GEMV_AVX2 float add_lanes(__m256 lo, __m256 hi) { return lanes::add16(lo, hi); }

// How many rows ahead of the current four to prefetch into L1: about 16 KiB
// of B ahead (measured on the Zen 5 VM: 5–25% faster streaming than without).
template <class W> int64_t prefetch_rows(int64_t k) {
  const int64_t rows = (int64_t(16384) / int64_t(sizeof(W)) / std::max<int64_t>(k, 1) + kRows - 1) / kRows * kRows;
  return std::max(rows, kRows);
}

// The cache line at offset i of the four rows from `rows_ahead` on: a hint
// only, so the bits do not depend on it.
template <class W> [[gnu::always_inline]] inline void prefetch_four(const W* rows_ahead, int64_t ld, int64_t i) {
  for (int64_t r = 0; r < kRows; ++r) _mm_prefetch(reinterpret_cast<const char*>(rows_ahead + r * ld + i), _MM_HINT_T0);
}

// B's storage: float32 (b) or bf16 bits (b16).
template <class W> [[gnu::always_inline]] inline const W* b_of(const GemvRows& g) {
  if constexpr (std::is_same_v<W, float>)
    return g.b;
  else
    return g.b16;
}

// The rows `ahead` on from row j, or row j itself near B's end.
template <class W> [[gnu::always_inline]] inline const W* rows_ahead(const GemvRows& g, int64_t j, int64_t ahead) {
  return b_of<W>(g) + (j + ahead + kRows <= g.n ? j + ahead : j) * g.ldb;
}

// Where the result goes: alpha·dot + beta·c (c not read when beta is 0).
[[gnu::always_inline]] inline void finish(const GemvRows& g, float* c, float dot) {
  const float scaled = g.alpha * dot;
  *c = g.beta == 0.f ? scaled : scaled + g.beta * *c;
}

// x rounded to bf16 (the value kept in float32) when Round, as BFloat16(float)
// rounds (core/bf16_simd.h: nearest even; a NaN stays NaN): bf16 precision's
// operands. A product of two such values is exact in float32.
template <bool Round> [[gnu::always_inline]] inline KS_GEMV_AVX512 __m512 rounded512(__m512 x) {
  if constexpr (!Round) return x;
  const __m512i u = _mm512_castps_si512(x);
  const __m512i r = _mm512_and_si512(bf16_simd::with_rounding_bias(u), _mm512_set1_epi32(int(0xffff0000u)));
  return _mm512_castsi512_ps(_mm512_mask_mov_epi32(r, bf16_simd::nan_lanes(u), u));
}
template <bool Round> [[gnu::always_inline]] inline KS_GEMV_AVX2 __m256 rounded256(__m256 x) {
  if constexpr (!Round) return x;
  const __m256i u = _mm256_castps_si256(x);
  const __m256i r = _mm256_and_si256(bf16_simd::with_rounding_bias(u), _mm256_set1_epi32(int(0xffff0000u)));
  return _mm256_castsi256_ps(_mm256_blendv_epi8(r, u, bf16_simd::nan_lanes(u)));
}

// 16 values of B from p (the first `lanes` of them; the rest 0) as float32:
// a float32 B rounded under Round, a bf16 B widened (exact: its bits in the
// high half of each lane).
template <bool Round> [[gnu::always_inline]] inline KS_GEMV_AVX512 __m512 load512(const float* p, __mmask16 lanes) {
  return rounded512<Round>(_mm512_maskz_loadu_ps(lanes, p));
}
template <bool Round> [[gnu::always_inline]] inline KS_GEMV_AVX512 __m512 load512(const uint16_t* p, __mmask16 lanes) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(lanes, p)), 16));
}
// 8 values of B from p as float32, for the AVX2 kernel (whole vectors; its
// tails go through a zero-padded copy, tail8).
template <bool Round> [[gnu::always_inline]] inline KS_GEMV_AVX2 __m256 load256(const float* p) {
  return rounded256<Round>(_mm256_loadu_ps(p));
}
template <bool Round> [[gnu::always_inline]] inline KS_GEMV_AVX2 __m256 load256(const uint16_t* p) {
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

// Four rows of a (x, rows lda apart; c's from `row` on) against four of
// B's rows (w, from column j of c): 16 accumulators, acc[4·r + q] for B's
// row r and a's row q, each loaded vector used four times, so the kernel is
// bound by its multiply-adds rather than by loads. Every accumulator sums
// the same products in the same order as the one-row loop below, and the
// 16 lane sums are taken together in add_lanes's tree: the same pairs of
// lanes added at each level (l + l+8, then + 4, + 2, + 1), moved between
// registers by shuffles, which do not round. So each output keeps the bits
// of its row alone. pf: B's rows to prefetch, or null.
template <bool Round, class W>
[[gnu::always_inline]] inline KS_GEMV_AVX512 void tile_avx512(const GemvRows& g, const W* w, const float* x,
                                                              int64_t lda, int64_t row, int64_t j, int64_t full,
                                                              __mmask16 tail, const W* pf) {
  __m512 acc[16];
  for (auto& v : acc) v = _mm512_setzero_ps();
  const auto step = [&](int64_t i, __mmask16 lanes) KS_GEMV_AVX512 __attribute__((always_inline)) {
    __m512 xv[4];
    for (int64_t q = 0; q < 4; ++q) xv[q] = _mm512_maskz_loadu_ps(lanes, x + q * lda + i);
    for (int64_t r = 0; r < kRows; ++r) {
      const __m512 wv = load512<Round>(w + r * g.ldb + i, lanes);
      for (int64_t q = 0; q < 4; ++q) acc[4 * r + q] = _mm512_fmadd_ps(wv, xv[q], acc[4 * r + q]);
    }
  };
  for (int64_t i = 0; i < full; i += 16) {
    if (pf) prefetch_four(pf, g.ldb, i);
    step(i, __mmask16(0xffff));
  }
  if (tail) step(full, tail);
  // Level 1, lane l + lane l+8: [acc 2p lanes 0-7 | acc 2p+1 lanes 0-7] + [their lanes 8-15].
  __m512 s8[8], s4[4], s2[2];
  for (int p = 0; p < 8; ++p)
    s8[p] = _mm512_add_ps(_mm512_shuffle_f32x4(acc[2 * p], acc[2 * p + 1], 0x44),
                          _mm512_shuffle_f32x4(acc[2 * p], acc[2 * p + 1], 0xee));
  // Level 2, + 4: 128-bit block b of s4[q] is acc[4q + b]'s four sums.
  for (int q = 0; q < 4; ++q)
    s4[q] = _mm512_add_ps(_mm512_shuffle_f32x4(s8[2 * q], s8[2 * q + 1], 0x88),
                          _mm512_shuffle_f32x4(s8[2 * q], s8[2 * q + 1], 0xdd));
  // Level 3, + 2: block b of s2[u] is acc[8u + b]'s two sums, then acc[8u + 4 + b]'s.
  for (int u = 0; u < 2; ++u)
    s2[u] = _mm512_add_ps(_mm512_shuffle_ps(s4[2 * u], s4[2 * u + 1], 0x44),
                          _mm512_shuffle_ps(s4[2 * u], s4[2 * u + 1], 0xee));
  // Level 4, + 1: lane 4q + r is acc[4r + q]'s sum, i.e. a's row q against B's row r.
  alignas(64) float sums[16];
  _mm512_store_ps(sums, _mm512_add_ps(_mm512_shuffle_ps(s2[0], s2[1], 0x88), _mm512_shuffle_ps(s2[0], s2[1], 0xdd)));
  for (int64_t q = 0; q < 4; ++q)
    for (int64_t r = 0; r < kRows; ++r) finish(g, g.c + (row + q) * g.ldc + j + r, sums[4 * q + r]);
}

// Columns [j0, j1) of c with 512-bit lanes, for every row of a (each
// contiguous, k values, rows lda apart): four rows of a at a time while
// there are four, then one at a time. The four of B's rows in hand are
// prefetched ahead only for a's first rows: the others find them in L1.
template <bool Round, class W>
KS_GEMV_AVX512 void rows_avx512(const GemvRows& g, const float* a, int64_t lda, int64_t j0, int64_t j1) {
  const int64_t k = g.k, full = k / 16 * 16;
  const __mmask16 tail = __mmask16((1u << (k - full)) - 1u), all = __mmask16(0xffff);
  const int64_t ahead = prefetch_rows<W>(k);
  int64_t j = j0;
  for (; j + kRows <= j1; j += kRows) {
    const W *w = b_of<W>(g) + j * g.ldb, *pf = rows_ahead<W>(g, j, ahead);
    int64_t row = 0;
    for (; row + 4 <= g.m; row += 4)
      tile_avx512<Round, W>(g, w, a + row * lda, lda, row, j, full, tail, row == 0 ? pf : nullptr);
    for (; row < g.m; ++row) {
      const float* x = a + row * lda;
      __m512 acc[kRows];
      for (auto& v : acc) v = _mm512_setzero_ps();
      for (int64_t i = 0; i < full; i += 16) {
        const __m512 xv = _mm512_loadu_ps(x + i);
        if (row == 0) prefetch_four(pf, g.ldb, i);
        for (int64_t r = 0; r < kRows; ++r)
          acc[r] = _mm512_fmadd_ps(load512<Round>(w + r * g.ldb + i, all), xv, acc[r]);
      }
      if (tail) {
        const __m512 xv = _mm512_maskz_loadu_ps(tail, x + full);
        for (int64_t r = 0; r < kRows; ++r)
          acc[r] = _mm512_fmadd_ps(load512<Round>(w + r * g.ldb + full, tail), xv, acc[r]);
      }
      for (int64_t r = 0; r < kRows; ++r)
        finish(g, g.c + row * g.ldc + j + r,
               add_lanes(_mm512_castps512_ps256(acc[r]), _mm512_extractf32x8_ps(acc[r], 1)));
    }
  }
  for (; j < j1; ++j) {  // the last rows of B, one at a time, with the same operations
    const W* w = b_of<W>(g) + j * g.ldb;
    for (int64_t row = 0; row < g.m; ++row) {
      const float* x = a + row * lda;
      __m512 acc = _mm512_setzero_ps();
      for (int64_t i = 0; i < full; i += 16)
        acc = _mm512_fmadd_ps(load512<Round>(w + i, all), _mm512_loadu_ps(x + i), acc);
      if (tail) acc = _mm512_fmadd_ps(load512<Round>(w + full, tail), _mm512_maskz_loadu_ps(tail, x + full), acc);
      finish(g, g.c + row * g.ldc + j, add_lanes(_mm512_castps512_ps256(acc), _mm512_extractf32x8_ps(acc, 1)));
    }
  }
}

// The mask of the first n (0–8) lanes of a 256-bit maskload.
KS_GEMV_AVX2 __m256i first_lanes(int64_t n) {
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(int(n)), lane);
}

// The same as rows_avx512, each 16-lane register as two 8-lane halves.
template <bool Round, class W>
KS_GEMV_AVX2 void rows_avx2(const GemvRows& g, const float* a, int64_t lda, int64_t j0, int64_t j1) {
  const int64_t k = g.k, full = k / 16 * 16, rest = k - full;
  const __m256i mask_lo = first_lanes(rest < 8 ? rest : 8), mask_hi = first_lanes(rest > 8 ? rest - 8 : 0);
  const auto load_tail = [&](const float* p, __m256& lo, __m256& hi) KS_GEMV_AVX2 {
    lo = _mm256_maskload_ps(p, mask_lo);
    hi = _mm256_maskload_ps(p + 8, mask_hi);
  };
  // B's tail: float32 through the masks; bf16 (no 16-bit masked loads in
  // AVX2) through a zero-padded copy of its `rest` values.
  const auto load_w_tail = [&](const W* p, __m256& lo, __m256& hi) KS_GEMV_AVX2 {
    if constexpr (std::is_same_v<W, float>) {
      load_tail(p, lo, hi);
      lo = rounded256<Round>(lo);
      hi = rounded256<Round>(hi);
    } else {
      alignas(32) uint16_t padded[16] = {};
      std::copy(p, p + rest, padded);
      lo = load256<Round>(padded);
      hi = load256<Round>(padded + 8);
    }
  };
  const int64_t ahead = prefetch_rows<W>(k);
  int64_t j = j0;
  for (; j + kRows <= j1; j += kRows) {
    const W *w = b_of<W>(g) + j * g.ldb, *pf = rows_ahead<W>(g, j, ahead);
    for (int64_t row = 0; row < g.m; ++row) {
      const float* x = a + row * lda;
      __m256 lo[kRows], hi[kRows];
      for (int64_t r = 0; r < kRows; ++r) lo[r] = hi[r] = _mm256_setzero_ps();
      for (int64_t i = 0; i < full; i += 16) {
        const __m256 x_lo = _mm256_loadu_ps(x + i), x_hi = _mm256_loadu_ps(x + i + 8);
        if (row == 0) prefetch_four(pf, g.ldb, i);
        for (int64_t r = 0; r < kRows; ++r) {
          lo[r] = _mm256_fmadd_ps(load256<Round>(w + r * g.ldb + i), x_lo, lo[r]);
          hi[r] = _mm256_fmadd_ps(load256<Round>(w + r * g.ldb + i + 8), x_hi, hi[r]);
        }
      }
      if (rest) {
        __m256 x_lo, x_hi, w_lo, w_hi;
        load_tail(x + full, x_lo, x_hi);
        for (int64_t r = 0; r < kRows; ++r) {
          load_w_tail(w + r * g.ldb + full, w_lo, w_hi);
          lo[r] = _mm256_fmadd_ps(w_lo, x_lo, lo[r]);
          hi[r] = _mm256_fmadd_ps(w_hi, x_hi, hi[r]);
        }
      }
      for (int64_t r = 0; r < kRows; ++r) finish(g, g.c + row * g.ldc + j + r, add_lanes(lo[r], hi[r]));
    }
  }
  for (; j < j1; ++j) {
    const W* w = b_of<W>(g) + j * g.ldb;
    for (int64_t row = 0; row < g.m; ++row) {
      const float* x = a + row * lda;
      __m256 lo = _mm256_setzero_ps(), hi = _mm256_setzero_ps();
      for (int64_t i = 0; i < full; i += 16) {
        lo = _mm256_fmadd_ps(load256<Round>(w + i), _mm256_loadu_ps(x + i), lo);
        hi = _mm256_fmadd_ps(load256<Round>(w + i + 8), _mm256_loadu_ps(x + i + 8), hi);
      }
      if (rest) {
        __m256 x_lo, x_hi, w_lo, w_hi;
        load_tail(x + full, x_lo, x_hi);
        load_w_tail(w + full, w_lo, w_hi);
        lo = _mm256_fmadd_ps(w_lo, x_lo, lo);
        hi = _mm256_fmadd_ps(w_hi, x_hi, hi);
      }
      finish(g, g.c + row * g.ldc + j, add_lanes(lo, hi));
    }
  }
}

bool has(GemvIsa isa) {
  const CpuFeatures& f = cpu_features();
  return isa == GemvIsa::Avx512 ? f.avx512 && f.avx2 : f.avx2;
}

}  // namespace

bool gemv_rows_available() { return has(GemvIsa::Avx2); }

int64_t gemv_rows_max_rows() { return has(GemvIsa::Avx512) ? 16 : 8; }

void gemv_rows(const GemvRows& g, GemvIsa isa) {
  KS_CHECK(has(isa), "gemv_rows: this CPU has no ", isa == GemvIsa::Avx512 ? "AVX-512" : "AVX2 with FMA");
  if (g.m <= 0 || g.n <= 0) return;
  // A strided a (a transposed operand) is gathered once, and rounded once
  // under round_bf16: m·k values, contiguous rows.
  std::vector<float> gathered;
  const float* a = g.a;
  int64_t lda = g.lda;
  KS_CHECK((g.b == nullptr) != (g.b16 == nullptr), "gemv_rows: exactly one of b and b16");
  if (g.inc_a != 1 || g.round_bf16) {
    gathered.resize(size_t(g.m * g.k));
    for (int64_t row = 0; row < g.m; ++row)
      for (int64_t i = 0; i < g.k; ++i) {
        const float x = g.a[row * g.lda + i * g.inc_a];
        gathered[size_t(row * g.k + i)] = g.round_bf16 ? float(BFloat16(x)) : x;
      }
    a = gathered.data();
    lda = g.k;
  }
  const auto columns = [&](int64_t j0, int64_t j1) {
    if (g.b16) {  // exact bf16 values: nothing to round as they are loaded
      if (isa == GemvIsa::Avx512)
        rows_avx512<false, uint16_t>(g, a, lda, j0, j1);
      else
        rows_avx2<false, uint16_t>(g, a, lda, j0, j1);
    } else if (isa == GemvIsa::Avx512) {
      (g.round_bf16 ? rows_avx512<true, float> : rows_avx512<false, float>)(g, a, lda, j0, j1);
    } else {
      (g.round_bf16 ? rows_avx2<true, float> : rows_avx2<false, float>)(g, a, lda, j0, j1);
    }
  };
  if (!g.threaded || num_threads() == 1 || in_parallel_region() || g.m * g.n * g.k < kThreadedGemv)
    return columns(0, g.n);
  // Blocks of 64 of B's rows; each output's bits do not depend on its block.
  constexpr int64_t kBlock = 64;
  parallel_for(0, (g.n + kBlock - 1) / kBlock, 1,
               [&](int64_t lo, int64_t hi) { columns(lo * kBlock, std::min(hi * kBlock, g.n)); });
}

void gemv_rows(const GemvRows& g) {
  static const GemvIsa widest = has(GemvIsa::Avx512) ? GemvIsa::Avx512 : GemvIsa::Avx2;
  gemv_rows(g, widest);
}

}  // namespace ks::cpu
