// ops/cpu/gemm/gemm.h — the one door to a GEMM on the CPU: every kernel that
// multiplies matrices (ops/cpu/linalg.cpp, the tile products of the fused
// attention kernels, ...) fills a cpu::Gemm and calls cpu::gemm.
//
// Behind it, one path per precision:
//   - float64, and float32 under MatmulPrecision::Float32: OpenBLAS sgemm /
//     dgemm (gemm.cpp). OpenBLAS always runs single-threaded here (its
//     pthreads workers busy-wait long after each threaded call, taking the
//     cores from the oneTBB work that follows, and copy the float mode,
//     core/denormals.h, of the thread that started them): a threaded GEMM is
//     cut into bands of C run as oneTBB tasks. A DYNAMIC_ARCH OpenBLAS falls
//     back to SSE3 kernels on CPU models it does not know; gemm.cpp
//     re-selects by instruction set at load time.
//   - float32 under MatmulPrecision::BFloat16 (core/matmul_precision.h): every
//     element of op(A) and op(B) is first rounded to bfloat16 (nearest even,
//     as ks::BFloat16 rounds); products are exact in float32 and summed in
//     float32 (bf16.cpp). It runs on the kernel cpu_gemm_path() names
//     (core/cpu_features.h): AMX tiles, AVX512-BF16, or OpenBLAS sgemm on
//     rounded float32 copies; results differ between those only by float32
//     summation order.
// Not here: batching and strided layouts (ops/cpu/linalg.cpp,
// ops/gemm_layout.h); operands packed once and multiplied many times by a
// fused kernel (ops/cpu/gemm/packed.h).
#pragma once

#include <cstdint>
#include <optional>

#include "core/matmul_precision.h"

namespace ks::cpu {

// One operand of a GEMM, row-major: element (r, c) of op(X) at data[r·ld + c],
// or at data[c·ld + r] when `transposed` (X stored as the transpose of op(X)).
template <class T> struct GemmMatrix {
  const T* data = nullptr;
  int64_t ld = 0;  // row stride of the stored matrix, in elements
  bool transposed = false;
  T at(int64_t r, int64_t c) const { return transposed ? data[c * ld + r] : data[r * ld + c]; }
};

// C (m, n) ← alpha · op(A) (m, k) · op(B) (k, n) + beta · C, row-major, C's
// rows ldc apart. Fields in BLAS's order, so that designated initialisers
// read like the call they replace.
template <class T> struct Gemm {
  int64_t m = 0, n = 0, k = 0;  // sizes must fit BLAS's 32-bit ints (callers check)
  T alpha = T(1);
  GemmMatrix<T> a = {}, b = {};
  T beta = T(0);
  T* c = nullptr;
  int64_t ldc = 0;
  // n values, or null: C = op(A)·op(B) + row_bias in every row (alpha 1,
  // beta 0), as if the bias were copied into C and the product added; the
  // bf16 kernels start their sums from it instead of making that extra pass.
  const T* row_bias = nullptr;
  // float32 only: the precision of the products; unset follows the process's
  // matmul_precision(). float64 is always exact.
  std::optional<MatmulPrecision> precision = std::nullopt;
  // On ks::num_threads() oneTBB tasks when the GEMM is big enough and the
  // caller is not inside a parallel region; otherwise on the calling thread.
  // The same bits either way with OpenBLAS's AVX-512 kernels and the bf16
  // kernels, not always with OpenBLAS's AVX2 ones (gemm.cpp).
  bool threaded = false;
};

// Runs g. m or n 0: nothing; k 0: an empty sum, C = beta·C (0 where beta is
// 0, whatever C held), or the bias rows.
template <class T> void gemm(const Gemm<T>& g);
extern template void gemm(const Gemm<float>&);
extern template void gemm(const Gemm<double>&);

// The OpenBLAS kernels in use, after that re-selection ("SkylakeX", "Haswell", ...):
// OPENBLAS_CORETYPE in the environment chooses them too.
const char* blas_kernels_name();

}  // namespace ks::cpu
