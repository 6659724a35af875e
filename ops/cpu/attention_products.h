// ops/cpu/attention_products.h — the tile products that the two tiled
// attention kernels on cpu::gemm (cpu/attention.cpp and, once per mixture
// component, cpu/mixture_attention.cpp) both take, each named for the term of
// the attention math it computes. Each is one cpu::gemm on the calling thread
// (the kernels' tasks are the parallelism), in the kernels' own precision,
// but for a decoding step's one query row, summed by a loop here.
// Operands: q (rows, p) and k (cols, p), v (cols, e), dO (rows, e), each with
// its row stride ld (a Mat's); tiles s, w, ds (rows, cols), rows cols apart.
// Not here: the row steps between the products (cpu/attention_tiles.h), the
// packed bf16 kernel's own products (cpu/attention_bf16.cpp).
#pragma once

#include <cmath>
#include <cstdint>

#include "ops/cpu/gemm/gemm.h"

namespace ks::cpu {

// c (m, n), rows ldc apart, ← alpha · op(a) op(b), or += with accumulate:
// the one cpu::gemm form every product below takes.
template <class T>
void tile_gemm(T* c, int64_t ldc, int64_t m, int64_t n, int64_t k, T alpha, GemmMatrix<T> a, GemmMatrix<T> b,
               bool accumulate) {
  gemm<T>({.m = m, .n = n, .k = k, .alpha = alpha, .a = a, .b = b, .beta = T(accumulate ? 1 : 0), .c = c, .ldc = ldc});
}

// s ← scale · q kᵀ, the scores.
template <class T>
void score_tile(T* s, int64_t rows, int64_t cols, int64_t p, T scale, const T* q, int64_t q_ld, const T* k,
                int64_t k_ld) {
  tile_gemm<T>(s, cols, rows, cols, p, scale, {.data = q, .ld = q_ld}, {.data = k, .ld = k_ld, .transposed = true},
               false);
}

// acc (rows, e), rows e apart, += w v: the weighted values.
template <class T>
void add_weighted_values(T* acc, int64_t rows, int64_t e, int64_t cols, const T* w, const T* v, int64_t v_ld) {
  tile_gemm<T>(acc, e, rows, e, cols, T(1), {.data = w, .ld = cols}, {.data = v, .ld = v_ld}, true);
}

// The same for the one query row of a decoding step (acc and w one row):
// key by key in order, one fused multiply-add per element, 32 columns at a
// time held in registers across the keys (a sum kept in memory waits on its
// own store at every key). As one BLAS call per (b, h) it went to OpenBLAS's
// sgemv, whose call and blocking cost more than the sum at e = 32 to 64
// (docs/performance.md, "A fourth machine", Decoding). Only a query of
// length 1 takes it, so a training step's bits, ragged last tiles included,
// stay the GEMM's.
template <class T> void add_weighted_values_row(T* acc, int64_t e, int64_t cols, const T* w, const T* v, int64_t v_ld) {
  constexpr int64_t kCols = 32;
  int64_t c0 = 0;
  for (; c0 + kCols <= e; c0 += kCols) {
    T sum[kCols];
    for (int64_t c = 0; c < kCols; ++c) sum[c] = acc[c0 + c];
    for (int64_t j = 0; j < cols; ++j) {
      const T wj = w[j];
      const T* vj = v + j * v_ld + c0;
      for (int64_t c = 0; c < kCols; ++c) sum[c] = std::fma(wj, vj[c], sum[c]);
    }
    for (int64_t c = 0; c < kCols; ++c) acc[c0 + c] = sum[c];
  }
  for (int64_t j = 0; j < cols && c0 < e; ++j)
    for (int64_t c = c0; c < e; ++c) acc[c] = std::fma(w[j], v[j * v_ld + c], acc[c]);
}

// dw ← dO vᵀ, the gradient of the weights.
template <class T>
void weight_grad_tile(T* dw, int64_t rows, int64_t cols, int64_t e, const T* g, int64_t g_ld, const T* v,
                      int64_t v_ld) {
  tile_gemm<T>(dw, cols, rows, cols, e, T(1), {.data = g, .ld = g_ld}, {.data = v, .ld = v_ld, .transposed = true},
               false);
}

// dv (cols, e), rows e apart, += wᵀ dO.
template <class T>
void add_value_grad(T* dv, int64_t cols, int64_t e, int64_t rows, const T* w, const T* g, int64_t g_ld) {
  tile_gemm<T>(dv, e, cols, e, rows, T(1), {.data = w, .ld = cols, .transposed = true}, {.data = g, .ld = g_ld}, true);
}

// From the score gradient ds: dq (rows, p) += scale · ds k and dk (cols, p) +=
// scale · dsᵀ q, both rows p apart.
template <class T>
void add_query_key_grads(T* dq, T* dk, int64_t rows, int64_t cols, int64_t p, T scale, const T* ds, const T* q,
                         int64_t q_ld, const T* k, int64_t k_ld) {
  tile_gemm<T>(dq, p, rows, p, cols, scale, {.data = ds, .ld = cols}, {.data = k, .ld = k_ld}, true);
  tile_gemm<T>(dk, p, cols, p, rows, scale, {.data = ds, .ld = cols, .transposed = true}, {.data = q, .ld = q_ld},
               true);
}

}  // namespace ks::cpu
