// ops/cpu/gemm/gemm.h — the one door to a GEMM on the CPU, and the only header
// of ops/cpu/gemm/ that code outside the folder includes: every kernel that
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
//   - float32 under MatmulPrecision::BFloat16 (core/matmul_precision.h) on a
//     CPU with a bf16 kernel (cpu_gemm_path(), core/cpu_features.h: AMX
//     tiles or AVX512-BF16): every element of op(A) and op(B) is first
//     rounded to bfloat16 (nearest even, as ks::BFloat16 rounds); products
//     are exact in float32 and summed in float32 (bf16.cpp); results differ
//     between the two kernels only by float32 summation order.
//   - float32 under BFloat16 without a bf16 kernel (the float32 path: no
//     bf16 units, or KS_CPU_GEMM=float32): the float32 path above, no
//     rounding, so results equal Float32's bit for bit at its speed.
//   - float32 under MatmulPrecision::Float16 (train.precision "fp16"), on
//     every CPU: an EMULATION, as Keystone uses no fp16 unit. Both operands
//     are rounded to IEEE half (as ks::Float16 rounds: nearest even, inf
//     beyond 65504, fp16 subnormals) into float32 copies in the same
//     layout, then the float32 path above multiplies them: the products of
//     an fp16 GEMM with float32 sums, slower than float32 (gemm.cpp).
// At the end, bf16::PackedProduct: the same bf16 products for a fused kernel
// that rounds and packs its operands once and multiplies parts of them many
// times (ops/cpu/attention_bf16.cpp), on the AMX or AVX512-BF16 path.
// Not here: batching and strided layouts (ops/cpu/linalg.cpp,
// ops/gemm_layout.h); the packed layouts themselves and the block kernels
// (packed.h, internal to this folder); linear's fused bf16 backward
// (linear_backward.cpp, registered as a kernel from this folder).
#pragma once

#include <cstdint>
#include <optional>

#include "core/cpu_features.h"
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
  // float32 only: B stored in bfloat16 (each value's bits, as ks::BFloat16
  // holds them) where b.data would point, b.data then null; b.ld and
  // b.transposed describe it. A bf16 weight: its values are already bf16, so
  // the products are those of a float32 B holding them, at any precision.
  // The few-row kernel reads it in place at half the bytes (decoding with
  // bf16 weights); other products widen it to a float32 copy first.
  const uint16_t* b_bf16 = nullptr;
  // float32 only: the precision of the products; unset follows the process's
  // matmul_precision(). float64 is always exact.
  std::optional<MatmulPrecision> precision = std::nullopt;
  // On ks::num_threads() oneTBB tasks when the GEMM is big enough and the
  // caller is not inside a parallel region; otherwise on the calling thread.
  // The same bits either way with OpenBLAS's AVX-512 kernels and the bf16
  // kernels, not always with OpenBLAS's AVX2 ones (gemm.cpp).
  bool threaded = false;
};

// Runs g at cpu_matmul_precision(g.precision or matmul_precision()). m or n 0: nothing; k 0: an empty sum, C = beta·C
// (0 where beta is 0, whatever C held), or the bias rows.
template <class T> void gemm(const Gemm<T>& g);
extern template void gemm(const Gemm<float>&);
extern template void gemm(const Gemm<double>&);

// The most bytes linear's fused bf16 backward (linear_backward.cpp) packs its
// output gradient into whole, per layout; above it the gradient is packed a
// piece at a time, with the same bits. 8 MiB unless set; tests lower it to
// run the pieces on small shapes. Returns the previous limit.
int64_t set_linear_backward_whole_bytes(int64_t bytes);

// The OpenBLAS kernels in use, after that re-selection ("SkylakeX", "Haswell", ...):
// OPENBLAS_CORETYPE in the environment chooses them too.
const char* blas_kernels_name();

// ---- Packed bf16 operands, for fused kernels (AMX and AVX512-BF16 paths only) ----
//
// A kernel that multiplies parts of the same operands many times (the fused
// attention: each key tile against each query tile) rounds and packs each
// operand once with pack_a / pack_b, then runs packed_product on the parts.
// The rounding and the block kernels are cpu::gemm's, so results equal the
// door's under MatmulPrecision::BFloat16 up to float32 summation order.
namespace bf16 {

// Packed rows of A, columns of B and the k of both are padded to multiples of this.
constexpr int64_t kPad = 32;
inline int64_t padded(int64_t x) { return (x + kPad - 1) / kPad * kPad; }
// The row stride pack_a gives an op(A) with k columns: k padded, plus one
// cache line, so that the 16 rows of an AMX tile do not share a few L1 sets.
inline int64_t packed_a_ld(int64_t k) { return padded(k) + 32; }

// Packed A: op(A) in bf16, row-major, rows `ld` apart, zero past its k.
struct PackedA {
  const uint16_t* data = nullptr;
  int64_t ld = 0;
  // The part from row i and k offset k0 on (k0 a multiple of kPad).
  PackedA at(int64_t i, int64_t k0) const { return {data + i * ld + k0, ld}; }
};
// Packed B: op(B) in bf16, in panels of 16 columns, kp·16 values apart: a
// panel holds its columns' kp values of k (a multiple of kPad) as kp/2 rows
// of (k, k+1) pairs, zero past the real k.
struct PackedB {
  const uint16_t* data = nullptr;
  int64_t kp = 0;
  // The part from k offset k0 (even) and column j (a multiple of 16) on.
  PackedB at(int64_t k0, int64_t j) const { return {data + (j / 16 * kp + k0) * 16, kp}; }
};

// op(A) (m, k) rounded and packed into out, on the calling thread:
// padded(m) rows of packed_a_ld(k) values, the padding zero.
PackedA pack_a(const GemmMatrix<float>& a, int64_t m, int64_t k, uint16_t* out);
// op(B) (k, n) rounded and packed into out, on the calling thread:
// padded(n) / 16 panels with kp = padded(k), padded(k) · padded(n) values,
// the padding zero.
PackedB pack_b(const GemmMatrix<float>& b, int64_t k, int64_t n, uint16_t* out);

// C (m, n) = A·B over the first k of packed parts, or C += A·B when
// `accumulate`, on the calling thread. k is a multiple of kPad (padded(m)
// rows of a and padded(n) columns of b are read, their k past the real one
// must be zero); only C's m × n elements are written.
struct PackedProduct {
  CpuGemmPath path = CpuGemmPath::Amx;  // Amx or Avx512Bf16: whose block kernel
  PackedA a = {};
  PackedB b = {};
  int64_t m = 0, n = 0, k = 0;
  float* c = nullptr;
  int64_t ldc = 0;
  bool accumulate = false;
};
void packed_product(const PackedProduct& p);

}  // namespace bf16
}  // namespace ks::cpu
