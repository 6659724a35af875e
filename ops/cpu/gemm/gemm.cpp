// ops/cpu/gemm/gemm.cpp — the GEMM door of gemm.h: its checks, empty sums
// and bias, the choice of precision, and the OpenBLAS path with its threading
// on oneTBB and the DYNAMIC_ARCH kernel re-selection.
// Not here: the bf16 driver and kernels (bf16.cpp, packed.h).
//
// Kernels. A DYNAMIC_ARCH OpenBLAS picks its kernels from the CPU model at
// load time and falls back to "Prescott" (SSE3) for models it does not know:
// 0.3.21 does so on Emerald Rapids, 4-5x below the AVX-512 kernels. When that
// fallback is active and the user has not chosen OPENBLAS_CORETYPE, Keystone
// re-selects by instruction set (SkylakeX for AVX-512, Haswell for AVX2+FMA)
// once at load time, through OpenBLAS's own OPENBLAS_CORETYPE mechanism.
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

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "core/error.h"
#include "core/parallel.h"
#include "ops/cpu/gemm/packed.h"

// Exported by DYNAMIC_ARCH builds of OpenBLAS only, hence weak.
extern "C" void gotoblas_dynamic_init(void) __attribute__((weak));
extern "C" void gotoblas_dynamic_quit(void) __attribute__((weak));

namespace ks::cpu {
namespace {

bool reselect_blas_kernels() {
  if (!gotoblas_dynamic_init || !gotoblas_dynamic_quit || std::getenv("OPENBLAS_CORETYPE")) return false;
  if (std::strcmp(openblas_get_corename(), "Prescott") != 0) return false;
  __builtin_cpu_init();
  const char* core = nullptr;
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512vl"))
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

// Before any GEMM: OpenBLAS's own threads stay idle for the process's life.
[[maybe_unused]] const bool g_blas_single_threaded = [] {
  openblas_set_num_threads(1);
  return true;
}();

}  // namespace

const char* blas_kernels_name() { return openblas_get_corename(); }

namespace {

CBLAS_TRANSPOSE op(bool transposed) { return transposed ? CblasTrans : CblasNoTrans; }

void call(bool ta, bool tb, int m, int n, int k, float alpha, const float* a, int lda, const float* b, int ldb,
          float beta, float* c, int ldc) {
  cblas_sgemm(CblasRowMajor, op(ta), op(tb), m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
void call(bool ta, bool tb, int m, int n, int k, double alpha, const double* a, int lda, const double* b, int ldb,
          double beta, double* c, int ldc) {
  cblas_dgemm(CblasRowMajor, op(ta), op(tb), m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

// Below this many multiply-adds a GEMM runs on the calling thread.
constexpr double kThreadedGemm = double(1 << 22);
// Band edges fall on multiples of this (OpenBLAS's register blocks divide it).
constexpr int64_t kBandAlign = 64;

template <class T>
void gemm_bands(bool ta, bool tb, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda, const T* b,
                int64_t ldb, T beta, T* c, int64_t ldc, bool threaded) {
  const int threads = num_threads();
  if (!threaded || threads == 1 || in_parallel_region() || double(m) * double(n) * double(k) < kThreadedGemm)
    return call(ta, tb, int(m), int(n), int(k), alpha, a, int(lda), b, int(ldb), beta, c, int(ldc));
  // Every task packs the operand its band does not cut: cut the larger one's
  // dim, so that the one packed twice is the smaller (rows when m >= n).
  const bool by_rows = m >= n;
  const int64_t extent = by_rows ? m : n;
  const int64_t per_thread = (extent + threads - 1) / threads;
  const int64_t band = (per_thread + kBandAlign - 1) / kBandAlign * kBandAlign;
  const int64_t bands = (extent + band - 1) / band;
  parallel_for(0, bands, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t t = lo; t < hi; ++t) {
      const int64_t x0 = t * band, len = std::min(band, extent - x0);
      if (by_rows)  // rows x0.. of op(A) and of C
        call(ta, tb, int(len), int(n), int(k), alpha, ta ? a + x0 : a + x0 * lda, int(lda), b, int(ldb), beta,
             c + x0 * ldc, int(ldc));
      else  // columns x0.. of op(B) and of C
        call(ta, tb, int(m), int(len), int(k), alpha, a, int(lda), tb ? b + x0 * ldb : b + x0, int(ldb), beta, c + x0,
             int(ldc));
    }
  });
}

}  // namespace

template <class T> void gemm(const Gemm<T>& g) {
  if (g.m <= 0 || g.n <= 0) return;
  KS_ASSERT(!g.row_bias || (g.alpha == T(1) && g.beta == T(0)));
  if (g.k <= 0) {  // an empty sum: C = beta·C (BLAS leaves 0·NaN to beta == 0 as 0), or the bias rows
    for (int64_t i = 0; i < g.m; ++i) {
      T* row = g.c + i * g.ldc;
      if (g.row_bias)
        std::copy(g.row_bias, g.row_bias + g.n, row);
      else
        for (int64_t j = 0; j < g.n; ++j) row[j] = g.beta == T(0) ? T(0) : g.beta * row[j];
    }
    return;
  }
  if constexpr (std::is_same_v<T, float>)
    if (g.precision.value_or(matmul_precision()) == MatmulPrecision::BFloat16) return bf16::gemm(g);
  // OpenBLAS: the bias copied into C, then C += A·B.
  if (g.row_bias)
    for (int64_t i = 0; i < g.m; ++i) std::copy(g.row_bias, g.row_bias + g.n, g.c + i * g.ldc);
  gemm_bands(g.a.transposed, g.b.transposed, g.m, g.n, g.k, g.alpha, g.a.data, g.a.ld, g.b.data, g.b.ld,
             g.row_bias ? T(1) : g.beta, g.c, g.ldc, g.threaded);
}

template void gemm(const Gemm<float>&);
template void gemm(const Gemm<double>&);

}  // namespace ks::cpu
