// ops/cpu/attention_tiles.h — what the CPU kernels of the fused attention
// ops (cpu/attention.cpp, cpu/attention_bf16.cpp, cpu/mixture_attention.cpp)
// share beyond ops/attention_formulas.h: the operand view each (b, h) matrix
// is read through, the parallel grain, a masked score row, ALiBi's biases on a score row,
// the softmax kernels' row steps (online softmax, finishing, probabilities,
// score gradients), a row of dropout factors drawn in dropout()'s numbering,
// and the forward's whole step on a score row (forward_score_row).
// Not here: the tile loops (each kernel's own), the tile products
// (cpu/attention_products.h, on cpu::gemm; the bf16 kernel's in its own file).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "core/copy.h"
#include "core/random_bulk.h"
#include "ops/attention.h"
#include "ops/attention_formulas.h"
#include "ops/cpu/row_math.h"
#include "ops/vec_math.h"

namespace ks::cpu {

// Multiply-adds per parallel chunk: tiny inputs (gradchecks, single decoding
// steps) stay on the calling thread; a training layer's tasks each get one.
inline int64_t attention_grain(int64_t work_per_task) {
  constexpr int64_t kGrainWork = 1 << 18;
  return std::max<int64_t>(1, kGrainWork / std::max<int64_t>(1, work_per_task));
}

// A (B, h, rows, cols) or (B, h, M, rows, cols) operand as BLAS reads it:
// each matrix row-major with unit column stride and row stride ld >= cols.
// The module's split heads (a transposed (B, T, h, p) view) and operands
// expanded over b or h qualify as they lie; anything else is copied once.
template <class T> struct Mat {
  Tensor held;  // the input, or its contiguous copy
  const T* base = nullptr;
  int64_t sb = 0, sh = 0, sm = 0, ld = 1, H = 1;
  explicit Mat(const Tensor& t) : H(t.size(1)) {
    const int64_t nd = t.dim(), cols = t.size(nd - 1);
    const bool ready = (t.stride(nd - 1) == 1 || cols <= 1) && t.stride(nd - 2) >= std::max<int64_t>(1, cols);
    held = ready ? t : contiguous_raw(t);
    base = held.data<T>();
    sb = held.stride(0);
    sh = held.stride(1);
    sm = nd == 5 ? held.stride(2) : 0;
    ld = std::max<int64_t>(1, ready ? held.stride(nd - 2) : cols);
  }
  // Row `row` of matrix (pair = b·h + head, component r).
  const T* at(int64_t pair, int64_t row, int64_t r = 0) const {
    return base + (pair / H) * sb + (pair % H) * sh + r * sm + row * ld;
  }
};

// Sets score row entries [lim, cols), the first `hidden` (a sliding window's,
// attention_formulas::window_hidden) and padded keys to -inf; returns the row max.
template <class T> T mask_row(T* s, int64_t lim, int64_t cols, const bool* pad, int64_t hidden = 0) {
  constexpr T kNegInf = -std::numeric_limits<T>::infinity();
  for (int64_t c = 0; c < hidden && c < lim; ++c) s[c] = kNegInf;
  for (int64_t c = lim; c < cols; ++c) s[c] = kNegInf;
  if (pad)
    for (int64_t c = 0; c < lim; ++c)
      if (pad[c]) s[c] = kNegInf;
  return row_max(s, lim);
}

// ALiBi: score row s of query position i_abs (causal_offset + i) over keys
// [j0, j0 + cols) += −slope·|i_abs − j| (ops/attention_formulas.h). Masked
// entries get it too; masking sets them to -inf after.
template <class T>
[[gnu::always_inline]] inline void add_alibi_row(T* s, int64_t cols, T slope, int64_t i_abs, int64_t j0) {
  for (int64_t c = 0; c < cols; ++c) s[c] -= slope * T(attention_formulas::alibi_distance(i_abs, j0 + c));
}

// The row steps both softmax attention kernels take (cpu/attention.cpp and
// cpu/attention_bf16.cpp), forced inline so that each kernel runs them in its
// own instruction set (the bf16 one compiles for AVX-512) with the same
// operations in the same order.

// Forward, one score row s (cols keys of a key tile, the first lim visible)
// through the online softmax: masked, turned into p = exp(s − m_new) in
// place, its sum folded into the row's running sum l (the running max m
// updated), the row's output accumulator acc (E values) rescaled. A row that
// has seen no key yet comes out as zeros.
template <class T>
[[gnu::always_inline]] inline void online_softmax_row(T* s, int64_t cols, int64_t lim, const bool* pad, T& m, T& l,
                                                      T* acc, int64_t E, int64_t hidden = 0) {
  constexpr T kNegInf = -std::numeric_limits<T>::infinity();
  const T m_tile = mask_row(s, lim, cols, pad, hidden);
  const T m_new = std::max(m, m_tile);
  if (m_new == kNegInf) {  // nothing seen yet: this tile adds nothing to the row
    std::fill(s, s + cols, T(0));
    return;
  }
  // exp in one loop (vectorised), the sum in order in another: a running sum
  // inside the exp loop kept it scalar.
  for (int64_t c = 0; c < cols; ++c) s[c] = vmath::exp(s[c] - m_new);  // -inf -> 0
  T sum = 0;
  for (int64_t c = 0; c < cols; ++c) sum += s[c];
  const T alpha = vmath::exp(m - m_new);  // 0 while m was -inf
  l = l * alpha + sum;
  m = m_new;
  if (alpha != T(1))
    for (int64_t c = 0; c < E; ++c) acc[c] *= alpha;
}

// Forward, the end of a query tile: out = acc / l, lse = m + log l per row (a
// row that saw no key: out 0, lse -inf). acc (rows, E); out rows E apart.
template <class T>
[[gnu::always_inline]] inline void finish_rows(T* out, T* lse, const T* acc, const T* m, const T* l, int64_t rows,
                                               int64_t E) {
  constexpr T kNegInf = -std::numeric_limits<T>::infinity();
  for (int64_t r = 0; r < rows; ++r) {
    const T lr = l[r];
    const T inv = lr > T(0) ? T(1) / lr : T(0);
    for (int64_t c = 0; c < E; ++c) out[r * E + c] = acc[r * E + c] * inv;
    lse[r] = lr > T(0) ? m[r] + std::log(lr) : kNegInf;
  }
}

// Backward: D_i = dO_i · O_i for the T rows of one (b, h); g rows at ld_g.
template <class T>
[[gnu::always_inline]] inline void row_dots(T* D, const T* g, int64_t ld_g, const T* o, int64_t T_rows, int64_t E) {
  for (int64_t i = 0; i < T_rows; ++i) {
    T acc = 0;
    for (int64_t c = 0; c < E; ++c) acc += g[i * ld_g + c] * o[i * E + c];
    D[i] = acc;
  }
}

// Backward, one recomputed score row (scaled, unmasked) to its probabilities
// P = exp(s − lse) at the visible keys, 0 elsewhere (and everywhere for a row
// that saw no key, whose lse is -inf).
template <class T>
[[gnu::always_inline]] inline void probability_row(T* p, int64_t cols, int64_t lim, const bool* pad, T lse,
                                                   int64_t hidden = 0) {
  mask_row(p, lim, cols, pad, hidden);
  for (int64_t c = 0; c < cols; ++c) p[c] = vmath::exp(p[c] - lse);  // -inf -> 0
  if (lim == 0) std::fill(p, p + cols, T(0));                        // lse = -inf would give NaN above
}

// Backward: dS = P ∘ (dP − D_i) in place of dP, for a (rows, cols) tile.
template <class T>
[[gnu::always_inline]] inline void score_gradient(T* dP, const T* P, const T* D, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    const T Dr = D[r];
    T* dsr = dP + r * cols;
    const T* pr = P + r * cols;
    for (int64_t c = 0; c < cols; ++c) dsr[c] = pr[c] * (dsr[c] - Dr);
  }
}

// f[c] = (kept ? drop_scale : 0) for the n weights from flat index idx0,
// drawn as ops/cpu/dropout.cpp draws them (core/random_bulk.h).
template <class T> void dropout_factors(T* f, int64_t n, uint64_t idx0, const SdpaParams& prm) {
  constexpr int64_t kChunk = 256;  // draws per bernoulli_draws call: a stack buffer
  bool kept[kChunk];
  const uint8_t* kept_bytes = reinterpret_cast<const uint8_t*>(kept);  // bytes vectorise (MaskedScale)
  const T scale = T(prm.drop_scale);
  for (int64_t c0 = 0; c0 < n; c0 += kChunk) {
    const int64_t len = std::min(kChunk, n - c0);
    bernoulli_draws(kept, len, prm.seed, prm.first_block, idx0 + uint64_t(c0), prm.keep);
    for (int64_t c = 0; c < len; ++c) f[c0 + c] = kept_bytes[c] ? scale : T(0);
  }
}

// Forward, what both softmax kernels (cpu/attention.cpp and
// cpu/attention_bf16.cpp) do to one score row s after its tile product:
// ALiBi's biases, the online softmax step (online_softmax_row) into the row's
// m, l and acc (E values), then, with dropout, the probabilities times their
// factors (f: cols values of scratch). The row is query i (i0 + r) of
// (b, h) pair `pair`, its keys [j0, j0 + cols), of q_len queries and k_len
// keys (dropout's numbering), pad the key padding of its b or null. Forced
// inline, as the steps it takes, so that each kernel runs it in its own
// instruction set with the same operations in the same order.
template <class T>
[[gnu::always_inline]] inline void forward_score_row(T* s, int64_t cols, const SdpaParams& prm, T slope, int64_t pair,
                                                     int64_t i, int64_t j0, int64_t q_len, int64_t k_len,
                                                     const bool* pad, T& m, T& l, T* acc, int64_t E, T* f) {
  using namespace attention_formulas;
  if (prm.alibi) add_alibi_row(s, cols, slope, prm.causal_offset + i, j0);
  online_softmax_row(s, cols, visible_prefix(prm, i, j0, cols), pad ? pad + j0 : nullptr, m, l, acc, E,
                     window_hidden(prm, i, j0, cols));
  if (prm.dropout) {
    dropout_factors(f, cols, weight_index(pair, q_len, k_len, i, j0), prm);
    for (int64_t c = 0; c < cols; ++c) s[c] *= f[c];
  }
}

}  // namespace ks::cpu
