// ops/cpu/gemm/q8_0.cpp — the Q8_0 weight product (q8_0.h): the few-row
// kernels (AVX-512, AVX2, portable: the same sums in the same order), the
// dequantized panels for more rows, and the CPU kernel of
// ops/q8_0.h's linear_q8_0.
#include "ops/cpu/gemm/q8_0.h"

// GCC 12's AVX-512 intrinsics pass _mm512_undefined_epi32() as an unused
// source, which -Wmaybe-uninitialized reports (GCC bug 105593).
#if !defined(__clang__)  // a GCC-only warning
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/cpu_features.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/parallel.h"
#include "ops/cpu/gemm/gemm.h"
#include "ops/cpu/gemm/lanes.h"

namespace ks::cpu {
namespace {

#define KS_Q8_AVX2 __attribute__((target("avx2,fma,f16c")))
#define KS_Q8_AVX512 __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512dq,avx512vl")))

constexpr int64_t kRows = 4;  // W's rows per step: four independent chains
// Below this many multiply-adds the product stays on the calling thread.
constexpr int64_t kThreaded = int64_t(1) << 17;
constexpr int64_t kPanel = 64;  // W's rows per task, and per dequantized panel

// The scales of W's rows [j, j + rows) as float32, row r's at out[r·nb + b].
void scales_of(const Q8Matrix& w, int64_t j, int64_t rows, float* out) {
  const int64_t nb = w.cols / kQ8Block;
  for (int64_t i = 0; i < rows * nb; ++i) out[i] = float16_value_of(w.d[size_t(j * nb + i)]);
}

// The same with F16C's conversion, eight at a time (the same values: the
// conversion from fp16 is exact either way).
KS_Q8_AVX2 void scales_of_f16c(const Q8Matrix& w, int64_t j, int64_t rows, float* out) {
  const int64_t nb = w.cols / kQ8Block, n = rows * nb;
  const uint16_t* d = w.d.data() + j * nb;
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(d + i))));
  for (; i < n; ++i) out[i] = _cvtsh_ss(d[i]);
}

// How many of W's rows ahead to prefetch: about 16 KiB (as gemv.cpp).
int64_t prefetch_rows(int64_t k) { return std::max<int64_t>((16384 / std::max<int64_t>(k, 1) + 3) / 4 * 4, kRows); }

// ---- portable: 16 lanes in an array ----

void rows_portable(float* c, const ActivationBlocks& x16, const Q8Matrix& w, const float* bias, int64_t j0,
                   int64_t j1) {
  const int64_t k = w.cols, nb = k / kQ8Block, n = w.rows;
  std::vector<float> ds(static_cast<size_t>(nb));
  for (int64_t j = j0; j < j1; ++j) {
    scales_of(w, j, 1, ds.data());
    const int8_t* q = w.q.data() + j * k;
    for (int64_t row = 0; row < x16.m; ++row) {
      const int16_t* x = x16.q.data() + row * k;
      const float* sx = x16.s.data() + row * nb;
      float acc[16] = {};
      for (int64_t b = 0; b < nb; ++b) {
        const float scale = ds[size_t(b)] * sx[b];
        for (int l = 0; l < 16; ++l) {
          const int64_t i = b * kQ8Block + 2 * l;
          const int32_t p = int32_t(q[i]) * x[i] + int32_t(q[i + 1]) * x[i + 1];
          acc[l] = std::fma(float(p), scale, acc[l]);
        }
      }
      c[row * n + j] = lanes::add16(acc) + (bias ? bias[j] : 0.f);
    }
  }
}

// ---- AVX2: each 16-lane sum as two 8-lane halves ----

// 16 int8 values at p against 16 int16 ones at x: 8 int32 sums of adjacent pairs, as float32 (exact: below 2^24).
[[gnu::always_inline]] inline KS_Q8_AVX2 __m256 pairs8(const int8_t* p, const int16_t* x) {
  const __m256i w = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_cvtepi32_ps(_mm256_madd_epi16(w, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x))));
}

// R of W's rows from row j (R a constant, so the accumulators stay in registers) against every row of a.
template <int R>
KS_Q8_AVX2 void group_avx2(float* c, const ActivationBlocks& x16, const Q8Matrix& w, const float* bias, int64_t j,
                           const float* ds, const int8_t* pf) {
  const int64_t k = w.cols, nb = k / kQ8Block, n = w.rows;
  const int8_t* q = w.q.data() + j * k;
  for (int64_t row = 0; row < x16.m; ++row) {
    const int16_t* x = x16.q.data() + row * k;
    const float* sx = x16.s.data() + row * nb;
    __m256 lo[R], hi[R];
    for (int r = 0; r < R; ++r) lo[r] = hi[r] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
      const int64_t i = b * kQ8Block;
      if (pf && row == 0 && b % 2 == 0)
        for (int r = 0; r < R; ++r) _mm_prefetch(reinterpret_cast<const char*>(pf + r * k + i), _MM_HINT_T0);
      for (int r = 0; r < R; ++r) {
        const int8_t* qr = q + r * k + i;
        const __m256 scale = _mm256_set1_ps(ds[r * nb + b] * sx[b]);
        lo[r] = _mm256_fmadd_ps(pairs8(qr, x + i), scale, lo[r]);            // pairs of values 0–15
        hi[r] = _mm256_fmadd_ps(pairs8(qr + 16, x + i + 16), scale, hi[r]);  // pairs of values 16–31
      }
    }
    for (int r = 0; r < R; ++r) c[row * n + j + r] = lanes::add16(lo[r], hi[r]) + (bias ? bias[j + r] : 0.f);
  }
}

// ---- AVX-512: 16 lanes in one register ----

template <int R>
KS_Q8_AVX512 void group_avx512(float* c, const ActivationBlocks& x16, const Q8Matrix& w, const float* bias, int64_t j,
                               const float* ds, const int8_t* pf) {
  const int64_t k = w.cols, nb = k / kQ8Block, n = w.rows;
  const int8_t* q = w.q.data() + j * k;
  for (int64_t row = 0; row < x16.m; ++row) {
    const int16_t* x = x16.q.data() + row * k;
    const float* sx = x16.s.data() + row * nb;
    __m512 acc[R];
    for (auto& v : acc) v = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
      const int64_t i = b * kQ8Block;
      if (pf && row == 0 && b % 2 == 0)
        for (int r = 0; r < R; ++r) _mm_prefetch(reinterpret_cast<const char*>(pf + r * k + i), _MM_HINT_T0);
      const __m512i xv = _mm512_loadu_si512(x + i);
      for (int r = 0; r < R; ++r) {
        // 32 int8 weights widened to int16, multiplied with the 32 activations: 16 sums of adjacent pairs.
        const __m512i wq = _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + r * k + i)));
        const __m512 p = _mm512_cvtepi32_ps(_mm512_madd_epi16(wq, xv));
        acc[r] = _mm512_fmadd_ps(p, _mm512_set1_ps(ds[r * nb + b] * sx[b]), acc[r]);
      }
    }
    for (int r = 0; r < R; ++r)
      c[row * n + j + r] =
          lanes::add16(_mm512_castps512_ps256(acc[r]), _mm512_extractf32x8_ps(acc[r], 1)) + (bias ? bias[j + r] : 0.f);
  }
}

// W's rows [j0, j1) against every row of a: four at a time on `four` while there are four, the last ones
// singly on `one`; each group's scales converted first, the rows ahead prefetched while its first row runs.
using Group = void (*)(float* c, const ActivationBlocks& x16, const Q8Matrix& w, const float* bias, int64_t j,
                       const float* ds, const int8_t* pf);
void rows_in_groups(Group four, Group one, float* c, const ActivationBlocks& x16, const Q8Matrix& w, const float* bias,
                    int64_t j0, int64_t j1) {
  const int64_t k = w.cols, nb = k / kQ8Block, n = w.rows, ahead = prefetch_rows(k);
  std::vector<float> ds(static_cast<size_t>(kRows * nb));
  int64_t j = j0;
  for (; j + kRows <= j1; j += kRows) {
    scales_of_f16c(w, j, kRows, ds.data());
    four(c, x16, w, bias, j, ds.data(), w.q.data() + (j + ahead + kRows <= n ? j + ahead : j) * k);
  }
  for (; j < j1; ++j) {
    scales_of_f16c(w, j, 1, ds.data());
    one(c, x16, w, bias, j, ds.data(), nullptr);
  }
}

bool has(Q8Isa isa) {
  const CpuFeatures& f = cpu_features();
  switch (isa) {
    case Q8Isa::Avx512: return f.avx512 && f.avx2;
    case Q8Isa::Avx2: return f.avx2;
    case Q8Isa::Portable: return true;
  }
  return false;
}

// Rows of a above kQ8FewRows: each task dequantizes a panel of W's rows and
// multiplies it through the GEMM door on its own thread.
void rows_panels(float* c, const float* a, int64_t m, const Q8Matrix& w, const float* bias) {
  const int64_t k = w.cols, n = w.rows;
  const auto panels = [&](int64_t p0, int64_t p1) {
    std::vector<float> panel(static_cast<size_t>(kPanel * k));
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t j = p * kPanel, rows = std::min(kPanel, n - j);
      std::vector<float> ds(static_cast<size_t>(rows * (k / kQ8Block)));
      (has(Q8Isa::Avx2) ? scales_of_f16c : scales_of)(w, j, rows, ds.data());
      const int8_t* q = w.q.data() + j * k;
      for (int64_t blk = 0; blk < rows * (k / kQ8Block); ++blk) {  // 32 values a block: one vectorised loop
        const float scale = ds[size_t(blk)];
        float* out = panel.data() + blk * kQ8Block;
        const int8_t* in = q + blk * kQ8Block;
        for (int64_t i = 0; i < kQ8Block; ++i) out[i] = float(in[i]) * scale;
      }
      gemm<float>({.m = m,
                   .n = rows,
                   .k = k,
                   .a = {.data = a, .ld = k},
                   .b = {.data = panel.data(), .ld = k, .transposed = true},
                   .c = c + j,
                   .ldc = n,
                   .row_bias = bias ? bias + j : nullptr,
                   .threaded = false});
    }
  };
  const int64_t count = (n + kPanel - 1) / kPanel;
  if (num_threads() == 1 || in_parallel_region())
    panels(0, count);
  else
    parallel_for(0, count, 1, panels);
}

void linear_q8_0_cpu(float* c, const float* a, int64_t m, const Q8Matrix& w, const float* bias) {
  if (m > kQ8FewRows)
    rows_panels(c, a, m, w, bias);
  else
    q8_0_rows(c, a, m, w, bias, q8_0_widest_isa(), /*threaded=*/true);
}

}  // namespace

ActivationBlocks quantize_activations(const float* a, int64_t m, int64_t k) {
  KS_CHECK(k % kQ8Block == 0, "quantize_activations: rows of ", k, " values, not a multiple of ", kQ8Block);
  ActivationBlocks out;
  out.m = m;
  out.q.resize(size_t(m * k));
  out.s.resize(size_t(m * (k / kQ8Block)));
  for (int64_t blk = 0; blk < m * (k / kQ8Block); ++blk) {
    const float* x = a + blk * kQ8Block;
    float amax = 0.0f;
    bool finite = true;
    for (int64_t j = 0; j < kQ8Block; ++j) {
      finite = finite && std::isfinite(x[j]);
      amax = std::max(amax, std::fabs(x[j]));
    }
    int16_t* xq = out.q.data() + blk * kQ8Block;
    if (!finite) {  // a NaN or an infinity: the block's products become NaN (0 · NaN), as float32's would
      out.s[size_t(blk)] = std::numeric_limits<float>::quiet_NaN();
      std::fill(xq, xq + kQ8Block, int16_t(0));
      continue;
    }
    const float scale = amax / 32767, inverse = scale != 0 ? 1.0f / scale : 0.0f;
    out.s[size_t(blk)] = scale;
    for (int64_t j = 0; j < kQ8Block; ++j) xq[j] = int16_t(std::lrintf(std::clamp(x[j] * inverse, -32767.f, 32767.f)));
  }
  return out;
}

Q8Isa q8_0_widest_isa() {
  static const Q8Isa widest = has(Q8Isa::Avx512) ? Q8Isa::Avx512 : has(Q8Isa::Avx2) ? Q8Isa::Avx2 : Q8Isa::Portable;
  return widest;
}

void q8_0_rows(float* c, const float* a, int64_t m, const Q8Matrix& w, const float* bias, Q8Isa isa, bool threaded) {
  KS_CHECK(has(isa), "q8_0_rows: this CPU has no ", isa == Q8Isa::Avx512 ? "AVX-512" : "AVX2 with FMA");
  if (m <= 0 || w.rows <= 0) return;
  const ActivationBlocks x16 = quantize_activations(a, m, w.cols);
  const auto columns = [&](int64_t j0, int64_t j1) {
    switch (isa) {
      case Q8Isa::Avx512: return rows_in_groups(group_avx512<kRows>, group_avx512<1>, c, x16, w, bias, j0, j1);
      case Q8Isa::Avx2: return rows_in_groups(group_avx2<kRows>, group_avx2<1>, c, x16, w, bias, j0, j1);
      case Q8Isa::Portable: return rows_portable(c, x16, w, bias, j0, j1);
    }
  };
  if (!threaded || num_threads() == 1 || in_parallel_region() || m * w.rows * w.cols < kThreaded)
    return columns(0, w.rows);
  parallel_for(0, (w.rows + kPanel - 1) / kPanel, 1,
               [&](int64_t lo, int64_t hi) { columns(lo * kPanel, std::min(hi * kPanel, w.rows)); });
}

KS_REGISTER_KERNEL(q8_0_linear_kernel, CPU, linear_q8_0_cpu);

}  // namespace ks::cpu
