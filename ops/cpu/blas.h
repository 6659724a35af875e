// ops/cpu/blas.h — Keystone's one door to OpenBLAS: the float/double GEMM
// wrappers every CPU kernel calls, and the process-wide thread count.
//
// OpenBLAS has quirks that must be handled in one place:
//   - one process-wide thread count and no per-call setting, so a caller says
//     how many threads its next GEMMs may use (use_blas_threads);
//   - its worker threads keep the float mode (FTZ/DAZ, core/denormals.h) of
//     the thread that started them, so after any change of that mode they
//     are shut down and restarted from the caller;
//   - a DYNAMIC_ARCH build falls back to SSE3 kernels on CPU models it does
//     not know; blas.cpp re-selects by instruction set at load time.
// Not here: batching, operand layouts and the choice between OpenBLAS's
// threads and Keystone's tasks (ops/cpu/linalg.cpp, ops/cpu/attention.cpp).
#pragma once

#include <cstdint>

namespace ks::cpu {

// C ← alpha · op(A) · op(B) + beta · C, row-major; op(X) = Xᵀ when the flag is
// set. A is (m, k) after op, B (k, n), C (m, n); ld* are row strides. Sizes
// must fit BLAS's 32-bit ints (callers check).
void blas_gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
               const float* b, int64_t ldb, float beta, float* c, int64_t ldc);
void blas_gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha, const double* a,
               int64_t lda, const double* b, int64_t ldb, double beta, double* c, int64_t ldc);

// The OpenBLAS threads each following GEMM of this process may use: 1 inside
// parallel tasks (the tasks are the parallelism), ks::num_threads() for one
// big GEMM. Restarts the workers first when the denormal mode has changed
// since they were started.
void use_blas_threads(int n);

}  // namespace ks::cpu
