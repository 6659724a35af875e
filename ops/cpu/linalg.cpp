// ops/cpu/linalg.cpp — the CPU GEMM kernel: batched cblas_sgemm / cblas_dgemm.
//
// Operands. A matrix goes to BLAS where it lies when its last two strides are
// (ld, 1) (row-major) or (1, ld) (a transposed view, passed with CblasTrans).
// Anything else (every other column, a stride-0 matrix dim) is copied first,
// one copy per distinct matrix: broadcast batch dims keep stride 0. Batches
// are walked by pointer offsets, so broadcast operands are read in place.
//
// Threads. OpenBLAS 0.3.21 (pthreads build) has one process-wide thread count
// (openblas_set_num_threads) and no per-call setting, so each call first sets
// it to what that call should use:
//   - one GEMM, or a few big ones: ks::num_threads() OpenBLAS threads, while
//     the TBB workers sleep;
//   - many GEMMs (attention heads): ks::parallel_for over the batch, each task
//     calling single-threaded BLAS;
//   - any call from inside a parallel region: single-threaded BLAS.
// OpenBLAS and TBB threads therefore never compete for the cores.
// OpenBLAS's workers keep the float mode (FTZ/DAZ, core/denormals.h) of the
// thread that started them, at library load, before Keystone set it; after
// any change of that mode they are shut down, and OpenBLAS starts them again
// from the next threaded call's thread, whose mode they copy.
//
// Kernels. A DYNAMIC_ARCH OpenBLAS picks its kernels from the CPU model at
// load time and falls back to "Prescott" (SSE3) for models it does not know:
// 0.3.21 does so on Emerald Rapids, 4-5x below the AVX-512 kernels. When that
// fallback is active and the user has not chosen OPENBLAS_CORETYPE, Keystone
// re-selects by instruction set (SkylakeX for AVX-512, Haswell for AVX2+FMA)
// once at load time, through OpenBLAS's own OPENBLAS_CORETYPE mechanism.
#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "core/copy.h"
#include "core/denormals.h"
#include "core/parallel.h"
#include "ops/gemm_layout.h"
#include "ops/linalg.h"

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

// A GEMM below this many multiply-adds gains little from OpenBLAS's own
// threads; batches of them run one GEMM per task instead.
constexpr double kSmallGemm = double(1 << 24);
// Multiply-adds per parallel task (~20-40 us on one core), so that a batch of
// tiny GEMMs stays on one thread.
constexpr double kTaskWork = double(1 << 20);

std::atomic<uint64_t> g_blas_workers_epoch{0};  // the denormal mode the workers were started under

void use_blas_threads(int n) {
  if (n > 1 && g_blas_workers_epoch.load() != denormal_mode_epoch()) {
    apply_denormal_mode();
    if (blas_thread_shutdown_) blas_thread_shutdown_();
    g_blas_workers_epoch = denormal_mode_epoch();
  }
  if (openblas_get_num_threads() != n) openblas_set_num_threads(n);
}

CBLAS_TRANSPOSE cblas_op(const GemmOperand& g) { return g.transposed ? CblasTrans : CblasNoTrans; }

inline void blas_gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, const float* a, int lda,
                      const float* b, int ldb, float beta, float* c, int ldc) {
  cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, 1.0f, a, lda, b, ldb, beta, c, ldc);
}
inline void blas_gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, const double* a, int lda,
                      const double* b, int ldb, double beta, double* c, int ldc) {
  cblas_dgemm(CblasRowMajor, ta, tb, m, n, k, 1.0, a, lda, b, ldb, beta, c, ldc);
}

template <class T>
void gemm_typed(const Tensor& c, const Tensor& a, const Tensor& b, bool accumulate) {
  if (c.numel() == 0) return;
  KS_ASSERT(c.is_contiguous() && a.dim() == c.dim() && b.dim() == c.dim());
  const int64_t M = c.size(-2), N = c.size(-1), K = a.size(-1);
  if (K == 0) {  // an empty sum
    if (!accumulate) fill_(c, 0.0);
    return;
  }
  const Tensor A = gemm_ready(a), B = gemm_ready(b);
  const GemmOperand la = *gemm_operand(M, K, A.stride(-2), A.stride(-1));
  const GemmOperand lb = *gemm_operand(K, N, B.stride(-2), B.stride(-1));
  KS_CHECK(std::max({M, N, K, la.ld, lb.ld}) <= INT_MAX, "gemm: matrices ", A.sizes(), " and ", B.sizes(),
           " exceed BLAS's 32-bit sizes");

  const Shape batch(c.sizes().begin(), c.sizes().end() - 2);
  const Shape& sa = A.strides();
  const Shape& sb = B.strides();
  const T* pa = A.data<T>();
  const T* pb = B.data<T>();
  T* pc = c.data<T>();
  const T beta = accumulate ? T(1) : T(0);
  auto run = [&](int64_t i) {  // GEMM number i of the batch (row-major order)
    int64_t oa = 0, ob = 0, rest = i;
    for (int64_t d = int64_t(batch.size()) - 1; d >= 0; --d) {
      const int64_t idx = rest % batch[size_t(d)];
      rest /= batch[size_t(d)];
      oa += idx * sa[size_t(d)];
      ob += idx * sb[size_t(d)];
    }
    blas_gemm(cblas_op(la), cblas_op(lb), int(M), int(N), int(K), pa + oa, int(la.ld), pb + ob, int(lb.ld), beta,
              pc + i * M * N, int(N));
  };

  const int threads = num_threads();
  const int64_t count = numel_of(batch);
  if (count == 1) {
    use_blas_threads(in_parallel_region() ? 1 : threads);
    run(0);
    return;
  }
  // One GEMM per task wins unless a few big GEMMs would leave a thread idle
  // in the last round (3 GEMMs on 2 threads): those use OpenBLAS's threads.
  const double mnk = double(M) * double(N) * double(K);
  const int64_t rounds = (count + threads - 1) / threads;
  const bool balanced = count * 10 >= rounds * threads * 9;
  if (in_parallel_region() || (threads > 1 && (balanced || mnk < kSmallGemm))) {
    use_blas_threads(1);
    const int64_t grain = std::max<int64_t>(1, int64_t(kTaskWork / mnk));
    parallel_for(0, count, grain, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) run(i);
    });
  } else {
    use_blas_threads(threads);
    for (int64_t i = 0; i < count; ++i) run(i);
  }
}

void gemm_cpu(const Tensor& c, const Tensor& a, const Tensor& b, bool accumulate) {
  dispatch_floating(c.dtype(), "gemm", [&](auto tag) {
    using T = typename decltype(tag)::type;
    gemm_typed<T>(c, a, b, accumulate);
  });
}

}  // namespace
KS_REGISTER_KERNEL(gemm_kernel, CPU, gemm_cpu);
}  // namespace ks::cpu
