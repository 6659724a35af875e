// ops/cpu/gemm/packed.h — internal to ops/cpu/gemm/ (code outside includes
// gemm.h): the packed bfloat16 operand layouts that the AMX and AVX512-BF16
// block kernels read, the 32×32 block kernels themselves, packing by ranges
// of rows and panels (for callers that pack in parallel), and the blocked
// product over whole packed operands (tiled_product). Callers: the bf16
// driver behind the door (bf16.cpp), the public packed products of gemm.h,
// and linear's fused backward (linear_backward.cpp).
//
// Packed A (gemm.h's PackedA): op(A) (m, k) rounded to bf16, row-major with
// a row stride of at least kp = k rounded up to 32 (packed_a_ld adds a cache
// line), rows padded to a multiple of 32; padding is zero.
// Packed B (gemm.h's PackedB): op(B) (k, n) in panels of 16 columns, each
// panel kp/2 rows of 16 bf16 pairs (64 bytes): element (k, n) at
//   panel n/16, row k/2, pair n%16, half k%2
// — the "VNNI" layout both _tile_dpbf16ps and vdpbf16ps consume (a B tile is
// 16 consecutive rows of a panel). Columns padded to a multiple of 32.
// A block kernel computes one (32, 32) float32 block over `kc` (a multiple
// of 32) of the k dim: c = init + A[32 rows, kc] · [panel0 | panel1][kc, 32],
// c with row stride ldc; init is the 32 rows at c_in with row stride ldc_in
// (c_in = c to accumulate; ldc_in = 0 repeats one row, a bias), or 0 when
// c_in is null.
// Not here: the door's code (gemm.cpp) and what is declared for callers
// outside this folder (gemm.h: Gemm, PackedA, PackedB, PackedProduct).
// Driver and products: bf16.cpp; packing: pack.cpp; kernels: amx.cpp,
// avx512bf16.cpp.
#pragma once

#include <cstdint>

#include "core/cpu_features.h"
#include "core/parallel.h"
#include "ops/cpu/gemm/gemm.h"

namespace ks::cpu::bf16 {

constexpr int64_t kBlock = 32;  // rows and columns of one block kernel call
constexpr int64_t kPanel = 16;  // columns per B panel
constexpr int64_t kKStep = 32;  // k per tile step (a 64-byte tile row of bf16)
// gemm.h's padding is what the block kernels read whole.
static_assert(kPad == kBlock && kPad == kKStep && kPad == 2 * kPanel);

inline int64_t round_up(int64_t x, int64_t to) { return (x + to - 1) / to * to; }

// body(0, count) on this thread, or parallel_for over [0, count) when
// `threaded`: how the GEMM drivers pack and multiply, threaded or not.
template <class F> void maybe_parallel(bool threaded, int64_t count, int64_t grain, F&& body) {
  if (threaded)
    parallel_for(0, count, grain, body);
  else
    body(int64_t(0), count);
}

// Rows [r0, r1) of packed A from op(A) (m, k), float32 (rounded) or
// bfloat16 (copied). kp: the packed row stride (>= k; zeros after k); rows
// past m are zero.
template <class Src>
void pack_a_rows(const GemmMatrix<Src>& a, int64_t m, int64_t k, int64_t kp, int64_t r0, int64_t r1, uint16_t* out);
// Panels [p0, p1) of packed B from op(B) (k, n), each kp (a multiple of 32) rows of k long.
void pack_b_panels(const GemmMatrix<float>& b, int64_t k, int64_t n, int64_t kp, int64_t p0, int64_t p1, uint16_t* out);

// Rows [r0, r1) of a float32 matrix g (m, n), row stride ldg, rounded once
// and written in two layouts (either may be null): packed A rows of op(A) = g
// (k = n, row stride ka >= round_up(n, 32), zeros past n) into a_out, and
// packed B of op(B) = g (k = m: panel row r/2 holds rows r and r + 1; panel
// stride kp_b = round_up(m, 32) rows) into b_out, with round_up(n, 32) / 16
// panels. r0 and r1 even; rows past m are zero in both. col_sums (n floats,
// or null) gets each column's sum over the real rows added, in float32: the
// linear layer's backward (linear_backward.cpp) needs g·W, gᵀ·x and
// the bias gradient, all from one read of g.
void pack_a_and_b(const float* g, int64_t ldg, int64_t m, int64_t n, int64_t ka, int64_t kp_b, int64_t r0, int64_t r1,
                  uint16_t* a_out, uint16_t* b_out, float* col_sums);

// dst[j·ldd + i] = alpha·src[i·lds + j] + beta·dst[j·ldd + i] for i < rows,
// j < cols (beta = 0 never reads dst): a result block written transposed,
// 16 × 16 at a time through registers.
void store_transposed(const float* src, int64_t lds, int64_t rows, int64_t cols, float alpha, float beta, float* dst,
                      int64_t ldd);

// The operands of the block that will follow on this thread (null where they
// are the current ones, or there is none), which a block kernel prefetches into L1.
struct NextBlock {
  const uint16_t* a = nullptr;
  const uint16_t* b0 = nullptr;
  const uint16_t* b1 = nullptr;
  const float* c = nullptr;  // the next block's accumulators, when it will load them
  int64_t ldc = 0;
};
// a: packed A at the block's first row and k offset, lda_p its row stride (kp);
// b0, b1: the two panels at the same k offset.
void amx_block(const uint16_t* a, int64_t lda_p, const uint16_t* b0, const uint16_t* b1, int64_t kc, float* c,
               int64_t ldc, const float* c_in, int64_t ldc_in, const NextBlock& next);
void avx512bf16_block(const uint16_t* a, int64_t lda_p, const uint16_t* b0, const uint16_t* b1, int64_t kc, float* c,
                      int64_t ldc, const float* c_in, int64_t ldc_in, const NextBlock& next);

// The float32 GEMM of the door (gemm.h) under MatmulPrecision::BFloat16, for
// m, n, k > 0: packing, then tiled_product, on the path cpu_gemm_path() names
// (amx or avx512bf16: without a bf16 kernel the door runs OpenBLAS instead).
void gemm(const Gemm<float>& g);

// C (m, n) = alpha·A·B + beta·C from whole packed operands, cut into macro
// tiles as bf16::gemm cuts them.
struct PackedGemm {
  PackedA a = {};  // round_up(m, 32) rows
  PackedB b = {};  // round_up(n, 32) / 16 panels; b.kp is the k of the product
  int64_t m = 0, n = 0;
  float alpha = 1, beta = 0;
  float* c = nullptr;
  int64_t ldc = 0;
  bool c_transposed = false;        // the (m, n) result written into C as its transpose
  const float* row_bias = nullptr;  // as Gemm's (alpha 1, beta 0 only)
  bool threaded = false;            // parallel over macro tiles on oneTBB
};
// bf16::gemm is packing, then this; a caller that packed its operands itself
// (linear_backward.cpp) calls it directly.
void tiled_product(CpuGemmPath path, const PackedGemm& p);

}  // namespace ks::cpu::bf16
