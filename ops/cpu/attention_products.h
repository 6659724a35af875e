// ops/cpu/attention_products.h — the tile products that the two tiled
// attention kernels on cpu::gemm (cpu/attention.cpp and, once per mixture
// component, cpu/mixture_attention.cpp) both take, each named for the term of
// the attention math it computes. Each is one cpu::gemm on the calling thread
// (the kernels' tasks are the parallelism), in the kernels' own precision.
// Operands: q (rows, p) and k (cols, p), v (cols, e), dO (rows, e), each with
// its row stride ld (a Mat's); tiles s, w, ds (rows, cols), rows cols apart.
// Not here: the row steps between the products (cpu/attention_tiles.h), the
// packed bf16 kernel's own products (cpu/attention_bf16.cpp).
#pragma once

#include <cstdint>

#include "ops/cpu/gemm/gemm.h"

namespace ks::cpu {

// s ← scale · q kᵀ, the scores.
template <class T>
void score_tile(T* s, int64_t rows, int64_t cols, int64_t p, T scale, const T* q, int64_t q_ld, const T* k,
                int64_t k_ld) {
  gemm<T>({.m = rows,
           .n = cols,
           .k = p,
           .alpha = scale,
           .a = {.data = q, .ld = q_ld},
           .b = {.data = k, .ld = k_ld, .transposed = true},
           .c = s,
           .ldc = cols});
}

// acc (rows, e), rows e apart, += w v: the weighted values.
template <class T>
void add_weighted_values(T* acc, int64_t rows, int64_t e, int64_t cols, const T* w, const T* v, int64_t v_ld) {
  gemm<T>({.m = rows,
           .n = e,
           .k = cols,
           .a = {.data = w, .ld = cols},
           .b = {.data = v, .ld = v_ld},
           .beta = T(1),
           .c = acc,
           .ldc = e});
}

// dw ← dO vᵀ, the gradient of the weights.
template <class T>
void weight_grad_tile(T* dw, int64_t rows, int64_t cols, int64_t e, const T* g, int64_t g_ld, const T* v,
                      int64_t v_ld) {
  gemm<T>({.m = rows,
           .n = cols,
           .k = e,
           .a = {.data = g, .ld = g_ld},
           .b = {.data = v, .ld = v_ld, .transposed = true},
           .c = dw,
           .ldc = cols});
}

// dv (cols, e), rows e apart, += wᵀ dO.
template <class T>
void add_value_grad(T* dv, int64_t cols, int64_t e, int64_t rows, const T* w, const T* g, int64_t g_ld) {
  gemm<T>({.m = cols,
           .n = e,
           .k = rows,
           .a = {.data = w, .ld = cols, .transposed = true},
           .b = {.data = g, .ld = g_ld},
           .beta = T(1),
           .c = dv,
           .ldc = e});
}

// From the score gradient ds: dq (rows, p) += scale · ds k and dk (cols, p) +=
// scale · dsᵀ q, both rows p apart.
template <class T>
void add_query_key_grads(T* dq, T* dk, int64_t rows, int64_t cols, int64_t p, T scale, const T* ds, const T* q,
                         int64_t q_ld, const T* k, int64_t k_ld) {
  gemm<T>({.m = rows,
           .n = p,
           .k = cols,
           .alpha = scale,
           .a = {.data = ds, .ld = cols},
           .b = {.data = k, .ld = k_ld},
           .beta = T(1),
           .c = dq,
           .ldc = p});
  gemm<T>({.m = cols,
           .n = p,
           .k = rows,
           .alpha = scale,
           .a = {.data = ds, .ld = cols, .transposed = true},
           .b = {.data = q, .ld = q_ld},
           .beta = T(1),
           .c = dk,
           .ldc = p});
}

}  // namespace ks::cpu
