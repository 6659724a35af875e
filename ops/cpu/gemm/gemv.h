// ops/cpu/gemm/gemv.h — the few-row float32 product of decoding: c (m, n) =
// a (m, k) · Bᵀ, B stored (n, k) row-major, i.e. m·n dot products of B's rows
// with a's. Every linear layer and the tied output layer of a model decoding
// is this product, with m the number of sequences decoded together, and it
// reads the whole weight for each step: bound by memory bandwidth at one
// row, by packing B at a few rows (gemm.cpp sends it up to 16 rows).
//
// Why not OpenBLAS: at one row its sgemv (which gemm.cpp called until
// 2026-12-05) streamed the reference LM's weights at 30–60 GB/s on one core
// on the Zen 5 machine, where four rows a step with wide accumulators stream
// them at 45–80 (docs/performance.md, "One-row products"). At a few rows
// 0.3.21's sgemm packs all of B on every call, and each element of B is used
// only m times: here each block of four of B's rows is read from memory once
// and serves every row of a from L1 (docs/performance.md, "Few-row products").
//
// Bits. Each output is one dot product, summed in 16 lanes (element i in
// lane i mod 16, in order of i, with fused multiply-adds) and the lanes
// added in a fixed tree: so the AVX-512 and the AVX2 kernels (two 8-wide
// halves) give the same bits, and so does any split of the outputs among
// threads, and a row of c does not depend on the other rows of a (a batch of
// decoded sequences gets each sequence's bits alone). They differ from
// OpenBLAS's sgemv and sgemm in the last bits, as those differ from each
// other.
// Under bf16 precision (round_bf16) the operands are rounded to bf16 as
// they are loaded, the same products as the bf16 GEMMs' in another order
// of float32 sums.
// Not here: a not-transposed B (c = a · B, the backward's dx; OpenBLAS's
// sgemv stays, or the bf16 driver, ops/cpu/gemm/bf16.cpp), float64, and the
// choice of which products come here (gemm.cpp's few_rows_kernel).
#pragma once

#include <cstdint>

#include "ops/cpu/gemm/gemm.h"

namespace ks::cpu {

enum class GemvIsa { Avx2, Avx512 };

// The widest kernel this CPU runs, or nothing (no AVX2 + FMA: callers use BLAS).
bool gemv_rows_available();
// How many rows of a the widest kernel takes before OpenBLAS's sgemm
// catches up (gemm.cpp's door): 16 with AVX-512, whose kernel holds four
// rows of a against four of B in 16 registers; 8 with AVX2, whose 16
// registers hold one row of a at a time.
int64_t gemv_rows_max_rows();
// c[i][j] = alpha · dot(B row j, a row i) + beta · c[i][j] for i < m, j < n
// (c not read when beta is 0); a row of a has k values at stride inc_a, its
// rows lda apart; c's rows are ldc apart.
// On oneTBB tasks over j when `threaded` and the product is large enough.
struct GemvRows {
  int64_t m = 1, n = 0, k = 0;
  float alpha = 1.f;
  const float* a = nullptr;
  int64_t inc_a = 1, lda = 0;
  const float* b = nullptr;
  // Or B stored in bfloat16 (the bits of each value, as ks::BFloat16 holds
  // them), b then null: a bf16 weight while decoding, read at half the bytes
  // and widened exactly as it is loaded, so the products equal those of a
  // float32 B holding the same values (round_bf16 then rounds only a).
  const uint16_t* b16 = nullptr;
  int64_t ldb = 0;
  float beta = 0.f;
  float* c = nullptr;
  int64_t ldc = 0;
  bool threaded = false;
  // bf16 precision's products: a and each element of B rounded to bf16
  // (nearest even, as core/dtype.h's BFloat16) before it is multiplied,
  // the sums in float32, as the bf16 GEMM kernels compute. A one-row
  // product is bound by reading B, so rounding B as it is loaded costs
  // about nothing, where packing it for the bf16 kernels costs more than
  // the product itself.
  bool round_bf16 = false;
};
// Runs on the widest kernel available (gemv_rows_available() must be true).
void gemv_rows(const GemvRows& g);
// Runs on the named kernel; tests compare the two (the CPU must have it).
void gemv_rows(const GemvRows& g, GemvIsa isa);

}  // namespace ks::cpu
