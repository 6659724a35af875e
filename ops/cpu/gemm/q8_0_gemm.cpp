// ops/cpu/gemm/q8_0_gemm.cpp — the Q8_0 weight product for many rows of a
// (a prompt; q8_0.h's q8_0_gemm): int16 activation blocks times W's int8
// blocks, each block of 32 summed exactly in int32, in the layout of AVX-512
// VNNI's vpdpwssd. Not here: the few-row kernel for decoding (q8_0.cpp), the
// choice between the two (q8_0.cpp's linear_q8_0_cpu).
//
// Why another kernel than the few-row one: that one sums along k in 16
// lanes and adds the lanes at the end, which suits a row of a against
// streamed weights; with many rows, each weight is worth widening once and
// using against every row. So W is packed kCols = 32 of its rows (outputs)
// at a time into int16 pairs, for each pair of k the 32 rows' two values
// side by side (one 512-bit register holds 16 outputs' pairs):
//
//   panel[b][p][col][2] = q[j + col][32·b + 2·p + {0, 1}]   // (blocks, 16, 32, 2) int16
//
// and one instruction (vpdpwssd, or vpmaddwd + vpaddd without VNNI) adds,
// for 16 outputs, a's pair (broadcast) times W's pairs to an int32 sum. A
// tile of kRowsTile rows of a × 32 outputs keeps its int32 sums for one block
// in registers, then scales them in float32.
//
// Bits. Output (i, j): acc = 0; for each block b in order, acc = fma(float(S),
// d[j][b] · s[i][b], acc), S = Σ over the block's 32 values of q·x (exact in
// int32: |q| ≤ 128, |x| ≤ 32767); then acc + bias[j]. The AVX-512 kernels
// (with and without VNNI), the AVX2 one and the portable one compute exactly
// this, so they give the same bits, for any split among threads, and a row
// of c does not depend on the other rows of a. They differ from the few-row
// kernel's bits (which adds 16 lanes of pair sums), not in the rounding of
// the activations: both round them to the same int16 blocks.
// GCC 12's AVX-512 intrinsics pass _mm512_undefined_epi32() as an unused
// source, which -Wmaybe-uninitialized reports (GCC bug 105593).
#if !defined(__clang__)  // a GCC-only warning
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "core/parallel.h"
#include "ops/cpu/gemm/q8_0.h"

namespace ks::cpu {
namespace {

#define KS_Q8G_AVX2 __attribute__((target("avx2,fma")))
#define KS_Q8G_AVX512 __attribute__((target("avx2,fma,avx512f,avx512bw,avx512dq,avx512vl")))

constexpr int64_t kCols = 32;                        // W's rows (outputs) per packed panel
constexpr int64_t kPairs = kQ8Block / 2;             // pairs of k in a block: 16
constexpr int64_t kPanelBlock = kPairs * kCols * 2;  // int16 values of one block of a panel: 1024 (2 KiB)
constexpr int64_t kChunk = 8;  // blocks of k per pass over the rows: the panel's 16 KiB stay in L1
constexpr int kRowsTile = 4;   // rows of a per tile (AVX-512: 8 int32 + 8 float32 accumulators)
// Below this many multiply-adds the product stays on the calling thread.
constexpr int64_t kThreaded = int64_t(1) << 20;

// The scales of W's rows [j, j + kCols) as float32 at ds[b · kCols + col]
// (zeros past W's end).
void panel_scales(const Q8Matrix& w, int64_t j, float* ds) {
  const int64_t nb = w.cols / kQ8Block, cols = std::min(kCols, w.rows - j);
  if (cols < kCols) std::fill(ds, ds + nb * kCols, 0.0f);
  for (int64_t col = 0; col < cols; ++col)
    for (int64_t b = 0; b < nb; ++b) ds[b * kCols + col] = float16_value_of(w.d[size_t((j + col) * nb + b)]);
}

// W's rows [j, j + kCols) packed as above (rows past W's end are zeros), their
// scales as panel_scales gives them.
void pack_panel(const Q8Matrix& w, int64_t j, int16_t* panel, float* ds) {
  const int64_t k = w.cols, nb = k / kQ8Block, cols = std::min(kCols, w.rows - j);
  panel_scales(w, j, ds);
  if (cols < kCols) std::memset(panel, 0, size_t(nb * kPanelBlock) * sizeof(int16_t));
  for (int64_t col = 0; col < cols; ++col) {
    const int8_t* q = w.q.data() + (j + col) * k;
    for (int64_t b = 0; b < nb; ++b) {
      int16_t* out = panel + b * kPanelBlock + col * 2;
      const int8_t* in = q + b * kQ8Block;
      for (int64_t p = 0; p < kPairs; ++p) {
        out[p * kCols * 2] = in[2 * p];
        out[p * kCols * 2 + 1] = in[2 * p + 1];
      }
    }
  }
}

// The same with AVX-512 for a full panel (32 of W's rows), the int16 values
// 16 rows at a time: each row's block of 32 int8 widened to 16 pairs (one
// int32 lane a pair), then the 16 × 16 lanes transposed, so lane `col` of
// register p holds row col's pair p. The same values as pack_panel.
KS_Q8G_AVX512 void transpose16(__m512i* r) {
  __m512i t[16];
  for (int i = 0; i < 8; ++i) {  // 2 × 2 blocks of lanes
    t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 4; ++i) {  // 4 × 4 within each 128-bit lane
    r[4 * i] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
    r[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
    r[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
    r[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
  }
  for (int h = 0; h < 2; ++h)  // then the 128-bit lanes themselves, in two rounds
    for (int i = 0; i < 4; ++i) {
      t[8 * h + i] = _mm512_shuffle_i32x4(r[8 * h + i], r[8 * h + 4 + i], 0x88);
      t[8 * h + 4 + i] = _mm512_shuffle_i32x4(r[8 * h + i], r[8 * h + 4 + i], 0xdd);
    }
  for (int i = 0; i < 8; ++i) {
    r[i] = _mm512_shuffle_i32x4(t[i], t[8 + i], 0x88);
    r[8 + i] = _mm512_shuffle_i32x4(t[i], t[8 + i], 0xdd);
  }
}

KS_Q8G_AVX512 void pack_panel_avx512(const Q8Matrix& w, int64_t j, int16_t* panel, float* ds) {
  const int64_t k = w.cols, nb = k / kQ8Block;
  panel_scales(w, j, ds);
  for (int64_t half = 0; half < kCols; half += 16)
    for (int64_t b = 0; b < nb; ++b) {
      __m512i r[16];
      for (int c = 0; c < 16; ++c)
        r[c] = _mm512_cvtepi8_epi16(
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w.q.data() + (j + half + c) * k + b * kQ8Block)));
      transpose16(r);
      for (int64_t p = 0; p < kPairs; ++p)
        _mm512_storeu_si512(panel + b * kPanelBlock + p * kCols * 2 + half * 2, r[p]);
    }
}

// The arguments of one tile: rows [0, R) of x (int16 blocks, row stride k)
// against a packed panel, blocks [b0, b1) of k, the float32 sums in acc
// (R rows of kCols; zero before the first block).
struct Tile {
  const int16_t* x;  // (R, k): the tile's first row of the activation blocks
  const float* sx;   // (R, nb): their scales
  const int16_t* panel;
  const float* ds;  // (nb, kCols)
  float* acc;       // (R, kCols)
  int64_t k, nb, b0, b1;
};

// ---- portable ----

void tile_portable(const Tile& t, int rows) {
  for (int r = 0; r < rows; ++r)
    for (int64_t col = 0; col < kCols; ++col) {
      float acc = t.acc[r * kCols + col];
      for (int64_t b = t.b0; b < t.b1; ++b) {
        const int16_t* x = t.x + r * t.k + b * kQ8Block;
        const int16_t* wp = t.panel + b * kPanelBlock + col * 2;
        int32_t s = 0;
        for (int64_t p = 0; p < kPairs; ++p)
          s += int32_t(wp[p * kCols * 2]) * x[2 * p] + int32_t(wp[p * kCols * 2 + 1]) * x[2 * p + 1];
        acc = std::fma(float(s), t.ds[b * kCols + col] * t.sx[r * t.nb + b], acc);
      }
      t.acc[r * kCols + col] = acc;
    }
}

// ---- AVX2: 8 outputs a register, 16 of the panel's 32 at a time ----

template <int R> KS_Q8G_AVX2 void tile_avx2(const Tile& t, int64_t half) {
  __m256 f[R][2];
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < 2; ++v) f[r][v] = _mm256_loadu_ps(t.acc + r * kCols + half + 8 * v);
  for (int64_t b = t.b0; b < t.b1; ++b) {
    __m256i s[R][2];
    for (int r = 0; r < R; ++r) s[r][0] = s[r][1] = _mm256_setzero_si256();
    const int16_t* wp = t.panel + b * kPanelBlock + half * 2;
    for (int64_t p = 0; p < kPairs; ++p) {
      const __m256i w0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wp + p * kCols * 2));
      const __m256i w1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wp + p * kCols * 2 + 16));
      for (int r = 0; r < R; ++r) {
        int32_t pair;
        std::memcpy(&pair, t.x + r * t.k + b * kQ8Block + 2 * p, sizeof pair);
        const __m256i xb = _mm256_set1_epi32(pair);
        s[r][0] = _mm256_add_epi32(s[r][0], _mm256_madd_epi16(w0, xb));
        s[r][1] = _mm256_add_epi32(s[r][1], _mm256_madd_epi16(w1, xb));
      }
    }
    for (int r = 0; r < R; ++r) {
      const __m256 sx = _mm256_set1_ps(t.sx[r * t.nb + b]);
      for (int v = 0; v < 2; ++v) {
        const __m256 scale = _mm256_mul_ps(_mm256_loadu_ps(t.ds + b * kCols + half + 8 * v), sx);
        f[r][v] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s[r][v]), scale, f[r][v]);
      }
    }
  }
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < 2; ++v) _mm256_storeu_ps(t.acc + r * kCols + half + 8 * v, f[r][v]);
}

// ---- AVX-512: 16 outputs a register, the panel's 32 at once ----

// Pair sums of w and xb added to s: vpdpwssd with VNNI, vpmaddwd + vpaddd without (the same exact sums).
// vpdpwssd is written in assembly because the kernels are compiled without VNNI: given VNNI, clang fuses
// the second form into vpdpwssd, which a CPU without VNNI (Skylake-X) cannot run.
template <bool Vnni> [[gnu::always_inline]] inline KS_Q8G_AVX512 __m512i dot_pairs(__m512i s, __m512i w, __m512i xb) {
  if constexpr (Vnni) {
    asm("vpdpwssd %2, %1, %0" : "+v"(s) : "v"(w), "v"(xb));
    return s;
  } else {
    return _mm512_add_epi32(s, _mm512_madd_epi16(w, xb));
  }
}

template <int R, bool Vnni> KS_Q8G_AVX512 void tile_avx512(const Tile& t) {
  __m512 f[R][2];
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < 2; ++v) f[r][v] = _mm512_loadu_ps(t.acc + r * kCols + 16 * v);
  for (int64_t b = t.b0; b < t.b1; ++b) {
    __m512i s[R][2];
    for (int r = 0; r < R; ++r) s[r][0] = s[r][1] = _mm512_setzero_si512();
    const int16_t* wp = t.panel + b * kPanelBlock;
    const int16_t* xb0 = t.x + b * kQ8Block;
    for (int64_t p = 0; p < kPairs; ++p) {
      const __m512i w0 = _mm512_loadu_si512(wp + p * kCols * 2);
      const __m512i w1 = _mm512_loadu_si512(wp + p * kCols * 2 + 32);
      for (int r = 0; r < R; ++r) {
        int32_t pair;
        std::memcpy(&pair, xb0 + r * t.k + 2 * p, sizeof pair);
        const __m512i xb = _mm512_set1_epi32(pair);
        s[r][0] = dot_pairs<Vnni>(s[r][0], w0, xb);
        s[r][1] = dot_pairs<Vnni>(s[r][1], w1, xb);
      }
    }
    const __m512 d0 = _mm512_loadu_ps(t.ds + b * kCols), d1 = _mm512_loadu_ps(t.ds + b * kCols + 16);
    for (int r = 0; r < R; ++r) {
      const __m512 sx = _mm512_set1_ps(t.sx[r * t.nb + b]);
      f[r][0] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s[r][0]), _mm512_mul_ps(d0, sx), f[r][0]);
      f[r][1] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s[r][1]), _mm512_mul_ps(d1, sx), f[r][1]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < 2; ++v) _mm512_storeu_ps(t.acc + r * kCols + 16 * v, f[r][v]);
}

// One tile of `rows` (1 to kRowsTile) rows on `isa`: R a constant in each kernel, so its sums stay in registers.
void tile(const Tile& t, int rows, Q8Isa isa) {
  switch (isa) {
    case Q8Isa::Avx512Vnni:
    case Q8Isa::Avx512: {
      using Kernel = void (*)(const Tile&);
      static constexpr Kernel vnni[] = {tile_avx512<1, true>, tile_avx512<2, true>, tile_avx512<3, true>,
                                        tile_avx512<4, true>};
      static constexpr Kernel plain[] = {tile_avx512<1, false>, tile_avx512<2, false>, tile_avx512<3, false>,
                                         tile_avx512<4, false>};
      return (isa == Q8Isa::Avx512Vnni ? vnni : plain)[rows - 1](t);
    }
    case Q8Isa::Avx2:  // two rows at a time (16 registers), each half of the panel in turn
      for (int r = 0; r < rows; r += 2) {
        Tile u = t;
        u.x += r * t.k;
        u.sx += r * t.nb;
        u.acc += r * kCols;
        for (int64_t half = 0; half < kCols; half += 16) rows - r >= 2 ? tile_avx2<2>(u, half) : tile_avx2<1>(u, half);
      }
      return;
    case Q8Isa::Portable: return tile_portable(t, rows);
  }
}

// Panels [p0, p1) of W against every row of a, on the calling thread.
void panels(float* c, const ActivationBlocks& x16, const Q8Matrix& w, const float* bias, Q8Isa isa, int64_t p0,
            int64_t p1) {
  const int64_t k = w.cols, nb = k / kQ8Block, n = w.rows, m = x16.m;
  std::vector<int16_t> panel(size_t(nb * kPanelBlock));
  std::vector<float> ds(size_t(nb * kCols)), acc(size_t(m * kCols));
  for (int64_t p = p0; p < p1; ++p) {
    const int64_t j = p * kCols, cols = std::min(kCols, n - j);
    if ((isa == Q8Isa::Avx512 || isa == Q8Isa::Avx512Vnni) && cols == kCols)
      pack_panel_avx512(w, j, panel.data(), ds.data());
    else
      pack_panel(w, j, panel.data(), ds.data());
    std::fill(acc.begin(), acc.end(), 0.0f);
    for (int64_t b0 = 0; b0 < nb; b0 += kChunk)
      for (int64_t i = 0; i < m; i += kRowsTile) {
        const Tile t{.x = x16.q.data() + i * k,
                     .sx = x16.s.data() + i * nb,
                     .panel = panel.data(),
                     .ds = ds.data(),
                     .acc = acc.data() + i * kCols,
                     .k = k,
                     .nb = nb,
                     .b0 = b0,
                     .b1 = std::min(nb, b0 + kChunk)};
        tile(t, int(std::min<int64_t>(kRowsTile, m - i)), isa);
      }
    for (int64_t i = 0; i < m; ++i)
      for (int64_t col = 0; col < cols; ++col)
        c[i * n + j + col] = acc[size_t(i * kCols + col)] + (bias ? bias[j + col] : 0.f);
  }
}

}  // namespace

void q8_0_gemm(float* c, const float* a, int64_t m, const Q8Matrix& w, const float* bias, Q8Isa isa, bool threaded) {
  KS_CHECK(q8_0_has(isa), "q8_0_gemm: this CPU has no ", q8_0_isa_name(isa));
  if (m <= 0 || w.rows <= 0) return;
  const ActivationBlocks x16 = quantize_activations(a, m, w.cols);
  const int64_t count = (w.rows + kCols - 1) / kCols;
  if (!threaded || num_threads() == 1 || in_parallel_region() || m * w.rows * w.cols < kThreaded)
    return panels(c, x16, w, bias, isa, 0, count);
  parallel_for(0, count, 1, [&](int64_t p0, int64_t p1) { panels(c, x16, w, bias, isa, p0, p1); });
}

}  // namespace ks::cpu
