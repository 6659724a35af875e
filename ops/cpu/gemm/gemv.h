// ops/cpu/gemm/gemv.h — the one-row float32 product of decoding: c (1, n) =
// a (1, k) · Bᵀ, B stored (n, k) row-major, i.e. n dot products of B's rows
// with a. Every linear layer and the tied output layer of a model decoding one
// sequence is this product, and at one row it reads the whole weight once
// for each output token, so it is bound by memory bandwidth.
//
// Why not OpenBLAS's sgemv (which gemm.cpp called until 2026-12-05): on the
// Zen 5 machine its row-dot kernel streamed the reference LM's weights at
// 30–60 GB/s on one core, where four rows a step with wide accumulators
// stream them at 45–80 (docs/performance.md, "One-row products").
//
// Bits. Each output is one dot product, summed in 16 lanes (element i in
// lane i mod 16, in order of i, with fused multiply-adds) and the lanes
// added in a fixed tree: so the AVX-512 and the AVX2 kernels (two 8-wide
// halves) give the same bits, and so does any split of the outputs among
// threads. They differ from OpenBLAS's sgemv and sgemm in the last bits, as
// those differ from each other.
// Under bf16 precision (round_bf16) the operands are rounded to bf16 as
// they are loaded, the same products as the bf16 GEMMs' in another order
// of float32 sums.
// Not here: a not-transposed B (c = a · B, the backward's dx; OpenBLAS's
// sgemv stays, or the bf16 driver, ops/cpu/gemm/bf16.cpp), float64.
#pragma once

#include <cstdint>

#include "ops/cpu/gemm/gemm.h"

namespace ks::cpu {

enum class GemvIsa { Avx2, Avx512 };

// The widest kernel this CPU runs, or nothing (no AVX2 + FMA: callers use BLAS).
bool gemv_rows_available();
// c[j] = alpha · dot(B row j, a) + beta · c[j] for j < n (c not read when
// beta is 0); a has k values at stride inc_a.
// On oneTBB tasks over j when `threaded` and the product is large enough.
struct GemvRows {
  int64_t n = 0, k = 0;
  float alpha = 1.f;
  const float* a = nullptr;
  int64_t inc_a = 1;
  const float* b = nullptr;
  int64_t ldb = 0;
  float beta = 0.f;
  float* c = nullptr;
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
