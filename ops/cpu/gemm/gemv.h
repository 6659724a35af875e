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
// Not here: a not-transposed B (c = a · B, the backward's dx; OpenBLAS's
// sgemv stays), float64, and bf16 precision (ops/cpu/gemm/bf16.cpp).
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
};
// Runs on the widest kernel available (gemv_rows_available() must be true).
void gemv_rows(const GemvRows& g);
// Runs on the named kernel; tests compare the two (the CPU must have it).
void gemv_rows(const GemvRows& g, GemvIsa isa);

}  // namespace ks::cpu
