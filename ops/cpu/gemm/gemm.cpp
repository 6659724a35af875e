// ops/cpu/gemm/gemm.cpp — the GEMM door of gemm.h: its checks, empty sums
// and bias, the choice of precision (bf16 only where the CPU has a bf16
// kernel: core/matmul_precision.h's cpu_matmul_precision), the fp16
// emulation (operands rounded to IEEE half, then the float32 path), and the
// OpenBLAS path with its threading on oneTBB and the DYNAMIC_ARCH kernel
// re-selection.
// Not here: the bf16 driver and kernels (bf16.cpp, packed.h), the public
// packed products (bf16.cpp, pack.cpp).
//
// Kernels. A DYNAMIC_ARCH OpenBLAS picks its kernels from the CPU model at
// load time and falls back to "Prescott" (SSE3) for models it does not know:
// 0.3.21 does so on Emerald Rapids, 4-5x below the AVX-512 kernels. When that
// fallback is active and the user has not chosen OPENBLAS_CORETYPE, Keystone
// re-selects by instruction set (SkylakeX for AVX-512, Haswell for AVX2+FMA)
// once at load time, through OpenBLAS's own OPENBLAS_CORETYPE mechanism. The
// same re-selection takes OpenBLAS's AVX-512 kernels down to Haswell's when
// KS_CPU_ISA caps the process below AVX-512 (core/cpu_features.h).
//
// Threads. OpenBLAS always runs single-threaded here; a threaded GEMM is cut
// into bands of C, one single-threaded OpenBLAS call per oneTBB task. Its
// own pthreads server was the alternative, and its workers, after each
// threaded call, spin on sched_yield for about 2^28 cycles (the default
// OPENBLAS_THREAD_TIMEOUT, read once at library load): on two cores they
// took the CPU from the oneTBB work that follows (about 10% of a float32
// training step in perf). With the SkylakeX kernels the results are the
// same bits (OpenBLAS's threads also split C, never k); the Haswell ones
// sum the rows and columns at a block's edge in another order than inside
// it, so where a band starts changes the last bits of a few results.
#include "ops/cpu/gemm/gemm.h"

#include <cblas.h>
#include <immintrin.h>
#include <strings.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <type_traits>
#include <vector>

#include "core/cpu_features.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/parallel.h"
#include "ops/cpu/gemm/gemv.h"
#include "ops/cpu/gemm/packed.h"

// Exported by DYNAMIC_ARCH builds of OpenBLAS only, hence weak.
extern "C" void gotoblas_dynamic_init(void) __attribute__((weak));
extern "C" void gotoblas_dynamic_quit(void) __attribute__((weak));
// Exported by OpenBLAS's pthreads builds (not the serial or OpenMP ones).
extern "C" int blas_thread_shutdown_(void) __attribute__((weak));

namespace ks::cpu {
namespace {

// The OpenBLAS 0.3.21 cores whose sgemm is AVX-512 code.
bool avx512_blas_core(const char* name) {
  for (const char* core : {"SkylakeX", "Cooperlake", "SapphireRapids"})
    if (strcasecmp(name, core) == 0) return true;
  return false;
}

bool reselect_blas_kernels() {
  if (!gotoblas_dynamic_init || !gotoblas_dynamic_quit || std::getenv("OPENBLAS_CORETYPE")) return false;
  // A bad KS_CPU_ISA counts as none here; cpu_features() reports it, after main has begun.
  const std::optional<CpuIsa> cap = cpu_isa_cap();
  const bool avx512_allowed = !cap || *cap >= CpuIsa::Avx512;
  const char* chosen = openblas_get_corename();
  const bool fell_back = std::strcmp(chosen, "Prescott") == 0;
  if (!fell_back && (avx512_allowed || !avx512_blas_core(chosen))) return false;
  __builtin_cpu_init();
  const char* core = nullptr;
  if (avx512_allowed && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
    core = "SkylakeX";
  else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    core = "Haswell";
  if (!core) return false;
  setenv("OPENBLAS_CORETYPE", core, 0);
  gotoblas_dynamic_quit();  // forget the fallback; init reads OPENBLAS_CORETYPE
  gotoblas_dynamic_init();
  return true;
}
[[maybe_unused]] const bool g_blas_kernels_reselected = reselect_blas_kernels();

// Before any GEMM: OpenBLAS runs single-threaded, and the worker threads its
// pthreads build started when it was loaded are joined. Left alone, each
// worker spins on sched_yield for OPENBLAS_THREAD_TIMEOUT (2^28 cycles, about
// 0.1 s) after the load before it sleeps: a tenth of a CPU second taken from
// every process that links Keystone, a short `keystone` command or a test
// binary included (a fifth of the CPU time of `keystone --help` under the
// sanitizers). OpenBLAS starts them again by itself if a threaded call ever
// comes, which none does here.
[[maybe_unused]] const bool g_blas_single_threaded = [] {
  openblas_set_num_threads(1);
  if (blas_thread_shutdown_) blas_thread_shutdown_();
  return true;
}();

}  // namespace

const char* blas_kernels_name() { return openblas_get_corename(); }

namespace {

template <class T> CBLAS_TRANSPOSE op(const GemmMatrix<T>& x) { return x.transposed ? CblasTrans : CblasNoTrans; }

void blas_gemv(CBLAS_TRANSPOSE t, int rows, int cols, float alpha, const float* m, int ld, const float* x, int incx,
               float beta, float* y) {
  cblas_sgemv(CblasRowMajor, t, rows, cols, alpha, m, ld, x, incx, beta, y, 1);
}
void blas_gemv(CBLAS_TRANSPOSE t, int rows, int cols, double alpha, const double* m, int ld, const double* x, int incx,
               double beta, double* y) {
  cblas_dgemv(CblasRowMajor, t, rows, cols, alpha, m, ld, x, incx, beta, y, 1);
}

// A few rows against a transposed float32 B (every linear layer's forward
// while decoding, m the sequences decoded together) run on our own row-dot
// kernel (gemv.h, on oneTBB when g.threaded), chosen by gemm() below:
// faster at streaming B at one row, and at a few rows it reads B once where
// 0.3.21's gemm packs the whole of op(B) on every call. It takes bf16
// precision too (rounding as it loads), so it is chosen before the bf16
// driver, which would pack all of B.
//
// Which products: every single row, as since 2026-12-05; from two to
// gemv_rows_max_rows() rows only against a B of at least kFewRowsWeights
// elements (a weight, not an attention score product of a short sequence),
// so that the float32 bits of training and of the small models, whose
// products stay on OpenBLAS, do not change. On the Zen 5 VM, one thread,
// against (768, 256), (256, 1024) and (8192, 256) weights, the AVX-512
// kernel is 1.4-1.8x sgemm at 16 rows, 1.7-6.4x at 4-8 (docs/performance.md,
// "Few-row products"); without its four-row tiles it fell to 0.75-0.8x at
// 16 rows, hence 8 for the AVX2 kernel, which has none (not measured on an
// AVX2-only machine).
constexpr int64_t kFewRowsWeights = int64_t(1) << 16;
bool few_rows_kernel(int64_t m, int64_t n, int64_t k, bool b_transposed) {
  return b_transposed && gemv_rows_available() && (m == 1 || (m <= gemv_rows_max_rows() && n * k >= kFewRowsWeights));
}

// g on the few-row kernel, whole (it splits B's rows among threads itself,
// by the whole product's shape, so the choice never depends on a band).
void few_rows(const Gemm<float>& g, bool round_bf16) {
  gemv_rows({.m = g.m,
             .n = g.n,
             .k = g.k,
             .alpha = g.alpha,
             .a = g.a.data,
             .inc_a = g.a.transposed ? g.a.ld : 1,
             .lda = g.a.transposed ? 1 : g.a.ld,
             .b = g.b.data,
             .b16 = g.b_bf16,
             .ldb = g.b.ld,
             .beta = g.beta,
             .c = g.c,
             .ldc = g.ldc,
             .threaded = g.threaded,
             .round_bf16 = round_bf16});
}

// C's m rows set to the bias row (n values), for a product then added to it.
template <class T> void fill_bias_rows(const Gemm<T>& g) {
  for (int64_t i = 0; i < g.m; ++i) std::copy(g.row_bias, g.row_bias + g.n, g.c + i * g.ldc);
}

// g with its bias, if any, already in C: C += A·B (beta 1) finishes it.
template <class T> Gemm<T> bias_in_c(Gemm<T> g) {
  if (g.row_bias) {
    fill_bias_rows(g);
    g.beta = T(1);
    g.row_bias = nullptr;
  }
  return g;
}

// One OpenBLAS call for g (sizes checked by the caller); a bias is first
// copied into C's rows and the product added to it (beta 1). A single row
// goes to gemv, because 0.3.21's gemm packs the whole of op(B) on every call
// (forward for GEMV only came in 0.3.27): c (1, n) = a (1, k) · op(B) is
// cᵀ = op(B)ᵀ · aᵀ. Otherwise one single-threaded gemm.
template <class T> void call(const Gemm<T>& biased) {
  const Gemm<T> g = bias_in_c(biased);
  if (g.m == 1) {
    if (g.beta == T(0)) std::fill(g.c, g.c + g.n, T(0));  // BLAS may read y even when beta is 0 (0 · NaN)
    const int inc_a = g.a.transposed ? int(g.a.ld) : 1;
    return blas_gemv(g.b.transposed ? CblasNoTrans : CblasTrans, int(g.b.transposed ? g.n : g.k),
                     int(g.b.transposed ? g.k : g.n), g.alpha, g.b.data, int(g.b.ld), g.a.data, inc_a,
                     g.beta == T(0) ? T(1) : g.beta, g.c);
  }
  if constexpr (std::is_same_v<T, float>)
    cblas_sgemm(CblasRowMajor, op(g.a), op(g.b), int(g.m), int(g.n), int(g.k), g.alpha, g.a.data, int(g.a.ld), g.b.data,
                int(g.b.ld), g.beta, g.c, int(g.ldc));
  else
    cblas_dgemm(CblasRowMajor, op(g.a), op(g.b), int(g.m), int(g.n), int(g.k), g.alpha, g.a.data, int(g.a.ld), g.b.data,
                int(g.b.ld), g.beta, g.c, int(g.ldc));
}

// Below this many multiply-adds a GEMM runs on the calling thread.
constexpr double kThreadedGemm = double(1 << 22);
// Band edges fall on multiples of this (OpenBLAS's register blocks divide it).
constexpr int64_t kBandAlign = 64;

// g on OpenBLAS, in bands of C on oneTBB when g.threaded and big enough.
template <class T> void gemm_bands(const Gemm<T>& g) {
  const int threads = num_threads();
  if (!g.threaded || threads == 1 || in_parallel_region() || double(g.m) * double(g.n) * double(g.k) < kThreadedGemm)
    return call(g);
  // Every task packs the operand its band does not cut: cut the larger one's
  // dim, so that the one packed twice is the smaller (rows when m >= n).
  const bool by_rows = g.m >= g.n;
  const int64_t extent = by_rows ? g.m : g.n;
  const int64_t per_thread = (extent + threads - 1) / threads;
  const int64_t band = (per_thread + kBandAlign - 1) / kBandAlign * kBandAlign;
  const int64_t bands = (extent + band - 1) / band;
  parallel_for(0, bands, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t t = lo; t < hi; ++t) {
      const int64_t x0 = t * band, len = std::min(band, extent - x0);
      Gemm<T> part = g;
      if (by_rows) {  // rows x0.. of op(A) and of C
        part.m = len;
        part.a.data = g.a.transposed ? g.a.data + x0 : g.a.data + x0 * g.a.ld;
        part.c = g.c + x0 * g.ldc;
      } else {  // columns x0.. of op(B), of C and of the bias
        part.n = len;
        part.b.data = g.b.transposed ? g.b.data + x0 * g.b.ld : g.b.data + x0;
        part.c = g.c + x0;
        if (g.row_bias) part.row_bias = g.row_bias + x0;
      }
      call(part);
    }
  });
}

// ---- fp16 emulation (MatmulPrecision::Float16 on the CPU) ----
//
// No fp16 arithmetic unit is used: each operand is rounded to IEEE half and
// widened back (exact), and the float32 path multiplies the rounded values.
// Products of two halves are exact in float32, so this is what an fp16 GEMM
// with float32 sums computes, up to float32 summation order.

// n values of `in` rounded to fp16 and widened back into `out`, as
// ks::Float16(float) rounds (nearest even; beyond the largest half, 65504,
// to inf; fp16 subnormals below 2^-14). F16C's vcvtps2ph rounds the same
// way; a NaN stays a NaN (its payload may differ from Float16's canonical one).
void round_to_fp16(const float* in, float* out, int64_t n) {
  int64_t i = 0;
#if defined(__F16C__)
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(h));
  }
#endif
  for (; i < n; ++i) out[i] = float(Float16(in[i]));
}

// The stored matrix of x (rows × cols as stored, rows x.ld apart) rounded
// to fp16 into `buf`, compact (ld = cols), with x's transposition: the
// float32 path then reads it in the same layout it would have read x.
GemmMatrix<float> fp16_copy(const GemmMatrix<float>& x, int64_t rows, int64_t cols, std::vector<float>& buf,
                            bool threaded) {
  buf.resize(size_t(rows * cols));
  auto round_rows = [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) round_to_fp16(x.data + r * x.ld, buf.data() + r * cols, cols);
  };
  // About 64k values a task; small operands (attention tiles) stay on the calling thread.
  if (threaded && !in_parallel_region() && rows * cols >= (int64_t(1) << 17))
    parallel_for(0, rows, std::max<int64_t>(1, (int64_t(1) << 16) / cols), round_rows);
  else
    round_rows(0, rows);
  return {.data = buf.data(), .ld = cols, .transposed = x.transposed};
}

// g with both operands rounded to fp16, then the float32 GEMM (bias, alpha,
// beta and C untouched by the rounding: only the operands are fp16). Fresh
// buffers every call, not thread-local ones: a thread waiting on oneTBB may
// run another GEMM's task meanwhile.
void fp16_gemm(const Gemm<float>& g) {
  std::vector<float> a, b;
  Gemm<float> r = g;
  r.a = fp16_copy(g.a, g.a.transposed ? g.k : g.m, g.a.transposed ? g.m : g.k, a, g.threaded);
  r.b = fp16_copy(g.b, g.b.transposed ? g.n : g.k, g.b.transposed ? g.k : g.n, b, g.threaded);
  r.precision = MatmulPrecision::Float32;
  gemm(r);
}

// g with its bf16 B (b_bf16) widened to a float32 copy in the same layout
// (exact), then the float32 door at g's precision: the products other than
// the few-row kernel's, which reads the bf16 values in place.
void widened_b_gemm(const Gemm<float>& g) {
  const int64_t rows = g.b.transposed ? g.n : g.k, cols = g.b.transposed ? g.k : g.n;
  // Not value-initialised (every element is written below): zeroing a
  // weight-sized buffer first cost as much as the widening.
  const std::unique_ptr<float[]> b(new float[size_t(rows * cols)]);
  const auto widen = [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const uint16_t* in = g.b_bf16 + r * g.b.ld;
      float* out = b.get() + r * cols;
      for (int64_t c = 0; c < cols; ++c) out[c] = float_from_bits(uint32_t(in[c]) << 16);
    }
  };
  if (g.threaded && !in_parallel_region() && rows * cols >= (int64_t(1) << 17))
    parallel_for(0, rows, std::max<int64_t>(1, (int64_t(1) << 16) / std::max<int64_t>(cols, 1)), widen);
  else
    widen(0, rows);
  Gemm<float> r = g;
  r.b = {.data = b.get(), .ld = cols, .transposed = g.b.transposed};
  r.b_bf16 = nullptr;
  gemm(r);
}

}  // namespace

template <class T> void gemm(const Gemm<T>& g) {
  if (g.m <= 0 || g.n <= 0) return;
  KS_ASSERT(!g.row_bias || (g.alpha == T(1) && g.beta == T(0)));
  KS_ASSERT(!g.b_bf16 || (std::is_same_v<T, float> && !g.b.data));
  if (g.k <= 0) {  // an empty sum: C = beta·C (BLAS leaves 0·NaN to beta == 0 as 0), or the bias rows
    if (g.row_bias) return fill_bias_rows(g);
    for (int64_t i = 0; i < g.m; ++i) {
      T* row = g.c + i * g.ldc;
      for (int64_t j = 0; j < g.n; ++j) row[j] = g.beta == T(0) ? T(0) : g.beta * row[j];
    }
    return;
  }
  if constexpr (std::is_same_v<T, float>) {
    // bf16 products where the CPU has a bf16 kernel; without one, float32 (core/matmul_precision.h).
    const MatmulPrecision precision = cpu_matmul_precision(g.precision.value_or(matmul_precision()));
    const bool few = few_rows_kernel(g.m, g.n, g.k, g.b.transposed);
    // A bf16 B is read in place by the few-row kernel only (fp16's emulation rounds it too).
    if (g.b_bf16 && (!few || precision == MatmulPrecision::Float16)) return widened_b_gemm(g);
    if (precision == MatmulPrecision::Float16) return fp16_gemm(g);  // emulated: rounded operands, float32 GEMM
    const bool bf16 = precision == MatmulPrecision::BFloat16;
    if (few) return few_rows(bias_in_c(g), bf16);
    if (bf16) return bf16::gemm(g);  // which starts its sums from the bias itself
  }
  // OpenBLAS; each band copies its part of the bias into C (in parallel
  // where the GEMM is cut into bands), then adds its product.
  gemm_bands(g);
}

template void gemm(const Gemm<float>&);
template void gemm(const Gemm<double>&);

}  // namespace ks::cpu
