// ops/cpu/blas.cpp — the OpenBLAS wrappers of blas.h, the thread count with
// its worker restart, and the DYNAMIC_ARCH kernel re-selection.
//
// Kernels. A DYNAMIC_ARCH OpenBLAS picks its kernels from the CPU model at
// load time and falls back to "Prescott" (SSE3) for models it does not know:
// 0.3.21 does so on Emerald Rapids, 4-5x below the AVX-512 kernels. When that
// fallback is active and the user has not chosen OPENBLAS_CORETYPE, Keystone
// re-selects by instruction set (SkylakeX for AVX-512, Haswell for AVX2+FMA)
// once at load time, through OpenBLAS's own OPENBLAS_CORETYPE mechanism.
//
// Workers. OpenBLAS's pthreads server copies the float mode of the thread
// that creates its workers, which happens at library load, before Keystone
// sets FTZ/DAZ. After any change of that mode (denormal_mode_epoch) the
// workers are shut down through the server's own shutdown; OpenBLAS starts
// them again from the next threaded call's thread, whose mode they copy.
#include "ops/cpu/blas.h"

#include <cblas.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "core/denormals.h"

// Exported by DYNAMIC_ARCH builds of OpenBLAS only, hence weak.
extern "C" void gotoblas_dynamic_init(void) __attribute__((weak));
extern "C" void gotoblas_dynamic_quit(void) __attribute__((weak));
// The pthreads server's shutdown; the next threaded call restarts the workers.
extern "C" int blas_thread_shutdown_(void) __attribute__((weak));

namespace ks::cpu {
namespace {

bool reselect_blas_kernels() {
  if (!gotoblas_dynamic_init || !gotoblas_dynamic_quit || std::getenv("OPENBLAS_CORETYPE")) return false;
  if (std::strcmp(openblas_get_corename(), "Prescott") != 0) return false;
  __builtin_cpu_init();
  const char* core = nullptr;
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
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

std::atomic<uint64_t> g_blas_workers_epoch{0};  // the denormal mode the workers were started under

CBLAS_TRANSPOSE op(bool transposed) { return transposed ? CblasTrans : CblasNoTrans; }

}  // namespace

void blas_gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
               const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  cblas_sgemm(CblasRowMajor, op(trans_a), op(trans_b), int(m), int(n), int(k), alpha, a, int(lda), b, int(ldb), beta,
              c, int(ldc));
}

void blas_gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha, const double* a,
               int64_t lda, const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  cblas_dgemm(CblasRowMajor, op(trans_a), op(trans_b), int(m), int(n), int(k), alpha, a, int(lda), b, int(ldb), beta,
              c, int(ldc));
}

void use_blas_threads(int n) {
  if (n > 1 && g_blas_workers_epoch.load() != denormal_mode_epoch()) {
    apply_denormal_mode();
    if (blas_thread_shutdown_) blas_thread_shutdown_();
    g_blas_workers_epoch = denormal_mode_epoch();
  }
  if (openblas_get_num_threads() != n) openblas_set_num_threads(n);
}

}  // namespace ks::cpu
