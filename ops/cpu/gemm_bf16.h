// ops/cpu/gemm_bf16.h — float32 GEMMs with bfloat16 operands on the CPU, the
// kernel behind matmul_precision() == BFloat16 (core/matmul_precision.h).
//
// bf16_gemm has blas_gemm's meaning (ops/cpu/blas.h: row-major, transposes
// as flags, leading dimensions) except that every element of op(A) and op(B)
// is first rounded to bfloat16 (nearest even, as ks::BFloat16 rounds);
// products are exact in float32 and summed in float32. It runs on the path
// cpu_gemm_path() names (core/cpu_features.h): AMX tiles, AVX512-BF16, or
// OpenBLAS sgemm on rounded float32 copies — every path computes the same
// products, so results differ between paths only by float32 summation order.
// `threaded`: parallel over output blocks on oneTBB (the caller is not inside
// a parallel region); otherwise it runs on the calling thread.
//
// gemm_f32 is the one entry a CPU kernel calls for a float32 GEMM: OpenBLAS
// under MatmulPrecision::Float32 (bit-for-bit as before), bf16_gemm under
// BFloat16, `threaded` meaning the same for both.
// Not here: batching and strided layouts (ops/cpu/linalg.cpp), packing and
// the kernels (ops/cpu/gemm_bf16_pack.h, gemm_bf16_*.cpp).
#pragma once

#include <cstdint>

namespace ks::cpu {

// row_bias (n values, or null): C = op(A)·op(B) + row_bias in every row
// (alpha 1, beta 0), as if the bias were copied into C and the product added;
// the bf16 kernels start their sums from it instead of making that extra
// pass over C.
void bf16_gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
               const float* b, int64_t ldb, float beta, float* c, int64_t ldc, bool threaded,
               const float* row_bias = nullptr);

void gemm_f32(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
              const float* b, int64_t ldb, float beta, float* c, int64_t ldc, bool threaded,
              const float* row_bias = nullptr);

}  // namespace ks::cpu
