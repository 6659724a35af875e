// ops/cpu/gemm/q8_0.cpp — the Q8_0 weight product (q8_0.h): the activations'
// int16 blocks, the few-row kernels (AVX-512, AVX2, portable: the same sums
// in the same order), and the CPU kernel of ops/q8_0.h's linear_q8_0, which
// hands more rows to q8_0_gemm.cpp.
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

// What a kernel reads and writes for a group of W's rows [j, j + R) against every row of a (as
// q8_0_gemm.cpp's kernels get a Tile): the rows' int8 values from q (row stride k) and float32 scales
// ds (row r's block b at ds[r·nb + b]), a's int16 blocks, the next group's weights to prefetch from pf
// (null: none), and c (rows of n, plus bias) for the sums. Passed by value: the kernel's own copy,
// which its stores to c cannot change, so its loops keep the fields in registers.
struct Group {
  const ActivationBlocks* a;
  const int8_t* q;
  const float* ds;
  const int8_t* pf;
  float* c;
  const float* bias;
  int64_t j, k, nb, n;

  // The group from W's row j, whose scales the caller has converted into ds.
  Group(const ActivationBlocks& x16, const Q8Matrix& w, float* c, const float* bias, int64_t j, const float* ds,
        const int8_t* pf)
      : a(&x16),
        q(w.q.data() + j * w.cols),
        ds(ds),
        pf(pf),
        c(c),
        bias(bias),
        j(j),
        k(w.cols),
        nb(k / kQ8Block),
        n(w.rows) {}

  // Row `row` of a: its k int16 values and its nb scales.
  [[gnu::always_inline]] const int16_t* x(int64_t row) const { return a->q.data() + row * k; }
  [[gnu::always_inline]] const float* sx(int64_t row) const { return a->s.data() + row * nb; }
  // While the first row of a runs, on every other block b: block b of the next group's R rows toward L1.
  template <int R> [[gnu::always_inline]] void prefetch(int64_t row, int64_t b) const {
    if (pf && row == 0 && b % 2 == 0)
      for (int r = 0; r < R; ++r) _mm_prefetch(reinterpret_cast<const char*>(pf + r * k + b * kQ8Block), _MM_HINT_T0);
  }
  // c's element (row, j + r): the sum of W's row j + r against a's row `row`, plus the bias.
  [[gnu::always_inline]] void put(int64_t row, int r, float sum) const {
    c[row * n + j + r] = sum + (bias ? bias[j + r] : 0.f);
  }
};

// ---- portable: 16 lanes in an array ----

void rows_portable(float* c, const ActivationBlocks& x16, const Q8Matrix& w, const float* bias, int64_t j0,
                   int64_t j1) {
  const int64_t nb = w.cols / kQ8Block;
  std::vector<float> ds(static_cast<size_t>(nb));
  for (int64_t j = j0; j < j1; ++j) {
    scales_of(w, j, 1, ds.data());
    const Group g(x16, w, c, bias, j, ds.data(), nullptr);
    const int8_t* q = g.q;
    for (int64_t row = 0; row < x16.m; ++row) {
      const int16_t* x = g.x(row);
      const float* sx = g.sx(row);
      float acc[16] = {};
      for (int64_t b = 0; b < nb; ++b) {
        const float scale = ds[size_t(b)] * sx[b];
        for (int l = 0; l < 16; ++l) {
          const int64_t i = b * kQ8Block + 2 * l;
          const int32_t p = int32_t(q[i]) * x[i] + int32_t(q[i + 1]) * x[i + 1];
          acc[l] = std::fma(float(p), scale, acc[l]);
        }
      }
      g.put(row, 0, lanes::add16(acc));
    }
  }
}

// ---- AVX2: each 16-lane sum as two 8-lane halves ----

// 16 int8 values at p against 16 int16 ones at x: 8 int32 sums of adjacent pairs, as float32 (exact: below 2^24).
[[gnu::always_inline]] inline KS_Q8_AVX2 __m256 pairs8(const int8_t* p, const int16_t* x) {
  const __m256i w = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_cvtepi32_ps(_mm256_madd_epi16(w, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x))));
}

// The group's R rows (R a constant, so the accumulators stay in registers) against every row of a.
template <int R> KS_Q8_AVX2 void group_avx2(const Group g) {
  for (int64_t row = 0; row < g.a->m; ++row) {
    const int16_t* x = g.x(row);
    const float* sx = g.sx(row);
    __m256 lo[R], hi[R];
    for (int r = 0; r < R; ++r) lo[r] = hi[r] = _mm256_setzero_ps();
    for (int64_t b = 0; b < g.nb; ++b) {
      const int64_t i = b * kQ8Block;
      g.prefetch<R>(row, b);
      for (int r = 0; r < R; ++r) {
        const int8_t* qr = g.q + r * g.k + i;
        const __m256 scale = _mm256_set1_ps(g.ds[r * g.nb + b] * sx[b]);
        lo[r] = _mm256_fmadd_ps(pairs8(qr, x + i), scale, lo[r]);            // pairs of values 0–15
        hi[r] = _mm256_fmadd_ps(pairs8(qr + 16, x + i + 16), scale, hi[r]);  // pairs of values 16–31
      }
    }
    for (int r = 0; r < R; ++r) g.put(row, r, lanes::add16(lo[r], hi[r]));
  }
}

// ---- AVX-512: 16 lanes in one register ----

template <int R> KS_Q8_AVX512 void group_avx512(const Group g) {
  for (int64_t row = 0; row < g.a->m; ++row) {
    const int16_t* x = g.x(row);
    const float* sx = g.sx(row);
    __m512 acc[R];
    for (auto& v : acc) v = _mm512_setzero_ps();
    for (int64_t b = 0; b < g.nb; ++b) {
      const int64_t i = b * kQ8Block;
      g.prefetch<R>(row, b);
      const __m512i xv = _mm512_loadu_si512(x + i);
      for (int r = 0; r < R; ++r) {
        // 32 int8 weights widened to int16, multiplied with the 32 activations: 16 sums of adjacent pairs.
        const __m512i wq =
            _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(g.q + r * g.k + i)));
        const __m512 p = _mm512_cvtepi32_ps(_mm512_madd_epi16(wq, xv));
        acc[r] = _mm512_fmadd_ps(p, _mm512_set1_ps(g.ds[r * g.nb + b] * sx[b]), acc[r]);
      }
    }
    for (int r = 0; r < R; ++r)
      g.put(row, r, lanes::add16(_mm512_castps512_ps256(acc[r]), _mm512_extractf32x8_ps(acc[r], 1)));
  }
}

// W's rows [j0, j1) against every row of a: four at a time on `four` while there are four, the last ones
// singly on `one`; each group's scales converted first, the rows ahead prefetched while its first row runs.
using GroupKernel = void (*)(Group);
void rows_in_groups(GroupKernel four, GroupKernel one, float* c, const ActivationBlocks& x16, const Q8Matrix& w,
                    const float* bias, int64_t j0, int64_t j1) {
  const int64_t k = w.cols, nb = k / kQ8Block, n = w.rows, ahead = prefetch_rows(k);
  std::vector<float> ds(static_cast<size_t>(kRows * nb));
  int64_t j = j0;
  for (; j + kRows <= j1; j += kRows) {
    // The scales of the rows ahead too: their stream beside the weights' is not one the hardware's
    // prefetcher follows in time (without this, their loads took 7% of a decoding step).
    if (j + ahead + kRows <= n)
      for (int64_t byte = 0; byte < kRows * nb * 2; byte += 64)
        _mm_prefetch(reinterpret_cast<const char*>(w.d.data() + (j + ahead) * nb) + byte, _MM_HINT_T0);
    scales_of_f16c(w, j, kRows, ds.data());
    four(Group(x16, w, c, bias, j, ds.data(), w.q.data() + (j + ahead + kRows <= n ? j + ahead : j) * k));
  }
  for (; j < j1; ++j) {
    scales_of_f16c(w, j, 1, ds.data());
    one(Group(x16, w, c, bias, j, ds.data(), nullptr));
  }
}

void linear_q8_0_cpu(float* c, const float* a, int64_t m, const Q8Matrix& w, const float* bias) {
  if (m > kQ8FewRows)
    q8_0_gemm(c, a, m, w, bias, q8_0_widest_isa(), /*threaded=*/true);
  else
    q8_0_rows(c, a, m, w, bias, q8_0_widest_isa(), /*threaded=*/true);
}

// 1 / scale, or 0 where the scale is 0 or below float32's smallest normal number (a block of values
// below 4e-34, whose reciprocal could overflow and make 0 · inf a NaN): that block counts as zeros.
float reciprocal_of_scale(float scale) { return scale >= std::numeric_limits<float>::min() ? 1.0f / scale : 0.0f; }

// One block of 32 activations into int16 values and their scale (q8_0.h's quantize_activations).
void quantize_block(const float* x, int16_t* xq, float& s) {
  float amax = 0.0f;
  bool finite = true;
  for (int64_t j = 0; j < kQ8Block; ++j) {
    finite = finite && std::isfinite(x[j]);
    amax = std::max(amax, std::fabs(x[j]));
  }
  if (!finite) {  // a NaN or an infinity: the block's products become NaN (0 · NaN), as float32's would
    s = std::numeric_limits<float>::quiet_NaN();
    std::fill(xq, xq + kQ8Block, int16_t(0));
    return;
  }
  const float scale = amax / 32767, inverse = reciprocal_of_scale(scale);
  s = scale;
  for (int64_t j = 0; j < kQ8Block; ++j) xq[j] = int16_t(std::lrintf(std::clamp(x[j] * inverse, -32767.f, 32767.f)));
}

// The same with AVX-512, the same bits: the largest magnitude is the same whatever the order, the
// products the same float32 products, and vcvtps2dq rounds to nearest, ties to even, as lrintf does in
// the default rounding mode.
KS_Q8_AVX512 void quantize_block_avx512(const float* x, int16_t* xq, float& s) {
  const __m512 lo = _mm512_abs_ps(_mm512_loadu_ps(x)), hi = _mm512_abs_ps(_mm512_loadu_ps(x + 16));
  const __m512 inf = _mm512_set1_ps(std::numeric_limits<float>::infinity());
  // |x| < inf is false for an infinity and for a NaN.
  if ((_mm512_cmp_ps_mask(lo, inf, _CMP_LT_OQ) & _mm512_cmp_ps_mask(hi, inf, _CMP_LT_OQ)) != 0xffff)
    return quantize_block(x, xq, s);  // the portable code writes the NaN scale and the zeros
  const float amax = _mm512_reduce_max_ps(_mm512_max_ps(lo, hi));
  const float scale = amax / 32767, inverse = reciprocal_of_scale(scale);
  s = scale;
  const __m512 v = _mm512_set1_ps(inverse), top = _mm512_set1_ps(32767.f), bottom = _mm512_set1_ps(-32767.f);
  for (int h = 0; h < 2; ++h) {
    const __m512 y = _mm512_min_ps(_mm512_max_ps(_mm512_mul_ps(_mm512_loadu_ps(x + 16 * h), v), bottom), top);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(xq + 16 * h), _mm512_cvtepi32_epi16(_mm512_cvtps_epi32(y)));
  }
}

}  // namespace

ActivationBlocks quantize_activations(const float* a, int64_t m, int64_t k, Q8Isa isa) {
  KS_CHECK(k % kQ8Block == 0, "quantize_activations: rows of ", k, " values, not a multiple of ", kQ8Block);
  ActivationBlocks out;
  out.m = m;
  out.q.resize(size_t(m * k));
  out.s.resize(size_t(m * (k / kQ8Block)));
  const bool wide = isa == Q8Isa::Avx512 || isa == Q8Isa::Avx512Vnni;
  for (int64_t blk = 0; blk < m * (k / kQ8Block); ++blk)
    (wide ? quantize_block_avx512 : quantize_block)(a + blk * kQ8Block, out.q.data() + blk * kQ8Block,
                                                    out.s[size_t(blk)]);
  return out;
}

bool q8_0_has(Q8Isa isa) {
  const CpuFeatures& f = cpu_features();
  switch (isa) {
    // VNNI within the avx512 level (KS_CPU_ISA's cap): every CPU with AVX512-BF16 or AMX has it, Skylake-X not.
    case Q8Isa::Avx512Vnni: return f.avx512 && f.avx2 && __builtin_cpu_supports("avx512vnni");
    case Q8Isa::Avx512: return f.avx512 && f.avx2;
    case Q8Isa::Avx2: return f.avx2;
    case Q8Isa::Portable: return true;
  }
  return false;
}

const char* q8_0_isa_name(Q8Isa isa) {
  switch (isa) {
    case Q8Isa::Avx512Vnni: return "AVX512-VNNI";
    case Q8Isa::Avx512: return "AVX-512";
    case Q8Isa::Avx2: return "AVX2 with FMA";
    case Q8Isa::Portable: return "portable code";
  }
  return "?";
}

Q8Isa q8_0_widest_isa() {
  static const Q8Isa widest = q8_0_has(Q8Isa::Avx512Vnni) ? Q8Isa::Avx512Vnni
                              : q8_0_has(Q8Isa::Avx512)   ? Q8Isa::Avx512
                              : q8_0_has(Q8Isa::Avx2)     ? Q8Isa::Avx2
                                                          : Q8Isa::Portable;
  return widest;
}

void q8_0_rows(float* c, const float* a, int64_t m, const Q8Matrix& w, const float* bias, Q8Isa isa, bool threaded) {
  KS_CHECK(q8_0_has(isa), "q8_0_rows: this CPU has no ", q8_0_isa_name(isa));
  if (m <= 0 || w.rows <= 0) return;
  const ActivationBlocks x16 = quantize_activations(a, m, w.cols);
  const auto columns = [&](int64_t j0, int64_t j1) {
    switch (isa) {
      case Q8Isa::Avx512Vnni:  // the few-row kernel has no use for VNNI (its pair sums go straight to float32)
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
