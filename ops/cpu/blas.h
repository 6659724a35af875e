// ops/cpu/blas.h — Keystone's one door to OpenBLAS: the float/double GEMM
// wrappers every CPU kernel calls, and the process-wide thread count.
//
// OpenBLAS has quirks that must be handled in one place:
//   - its pthreads workers busy-wait long after each threaded call, taking
//     the cores from the oneTBB work that follows, and copy the float mode
//     (FTZ/DAZ, core/denormals.h) of the thread that started them: so
//     OpenBLAS always runs single-threaded, and a threaded GEMM is cut into
//     bands run as oneTBB tasks (blas.cpp);
//   - a DYNAMIC_ARCH build falls back to SSE3 kernels on CPU models it does
//     not know; blas.cpp re-selects by instruction set at load time.
// Not here: batching and operand layouts (ops/cpu/linalg.cpp).
#pragma once

#include <cstdint>

namespace ks::cpu {

// C ← alpha · op(A) · op(B) + beta · C, row-major; op(X) = Xᵀ when the flag is
// set. A is (m, k) after op, B (k, n), C (m, n); ld* are row strides. Sizes
// must fit BLAS's 32-bit ints (callers check). `threaded`: on ks::num_threads()
// oneTBB tasks when the GEMM is big enough and the caller is not already in a
// parallel region; the same bits either way with OpenBLAS's AVX-512 kernels,
// not always with its AVX2 ones (blas.cpp).
void blas_gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
               const float* b, int64_t ldb, float beta, float* c, int64_t ldc, bool threaded = false);
void blas_gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha, const double* a,
               int64_t lda, const double* b, int64_t ldb, double beta, double* c, int64_t ldc, bool threaded = false);

// The OpenBLAS kernels in use, after that re-selection ("SkylakeX", "Haswell", ...):
// OPENBLAS_CORETYPE in the environment chooses them too.
const char* blas_kernels_name();

}  // namespace ks::cpu
