// tests/nn/softmax_reference.h — the loop reference of the "softmax" and
// "fixed" attention families, shared by their module tests
// (tests/nn/test_softmax_attention.cpp: self, cross, windowed;
// tests/nn/test_softmax_groups.cpp: grouped-query heads and ALiBi), so that
// the formula is written out once: softmax(Q_n K_{n/(h/g)}ᵀ/√p −
// m_n|offset + i − j| + mask) V_{n/(h/g)} per head n, concatenated, then W_o
// (Vaswani et al.; g key/value heads, Ainslie et al.; ALiBi's slopes m_n,
// Press et al.). Not here: the other families' formulas, which each test file
// writes out from its paper, and the pieces every reference uses
// (attention_reference.h).
#pragma once

#include <cmath>
#include <vector>

#include "nn/attention/softmax_attention.h"
#include "nn/attention_reference.h"

namespace ks::testing {

// ALiBi's slope of head n of h (the paper's code: 2^(-8(n+1)/h) for a power
// of two h; else the largest power of two c below h takes c's sequence and
// the rest every other slope of 2c's), recomputed here.
inline double alibi_slope_ref(int64_t n, int64_t h) {
  int64_t c = 1;
  while (2 * c <= h) c *= 2;
  return n < c ? std::pow(2.0, -8.0 * double(n + 1) / double(c))
               : std::pow(2.0, -4.0 * double(2 * (n - c) + 1) / double(c));
}

// The reference for queries `query` (B, T, d) over `key` and `value` (B, S,
// kv): g = the config's kv_heads, the ALiBi term when it has alibi (offset:
// the first query's position), masked(b, i, j) hiding key j from query i.
// Fills `weights` (B, h, T, S) if given.
inline Vec mha_ref(const nn::MultiHeadAttention& m, const Tensor& query, const Tensor& key, const Tensor& value,
                   const MaskFn& masked, Vec* weights = nullptr, int64_t offset = 0) {
  const int64_t B = query.size(0), T = query.size(1), S = key.size(1);
  const int64_t h = m.config.heads, g = m.config.resolved_kv_heads(), p = m.config.resolved_head_dim();
  const int64_t hp = h * p, gp = g * p;
  const Vec Q = linear_ref(query.to_vector<double>(), B * T, *m.q);
  const Vec K = linear_ref(key.to_vector<double>(), B * S, *m.k);
  const Vec Vv = linear_ref(value.to_vector<double>(), B * S, *m.v);
  Vec heads(size_t(B * T * hp), 0.0);
  if (weights) weights->assign(size_t(B * h * T * S), 0.0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t n = 0; n < h; ++n)
      for (int64_t i = 0; i < T; ++i) {
        const int64_t kh = n / (h / g);
        Vec w(static_cast<size_t>(S));
        std::vector<bool> mask(static_cast<size_t>(S));
        for (int64_t j = 0; j < S; ++j) {
          double dot = 0;
          for (int64_t c = 0; c < p; ++c)
            dot += Q[size_t((b * T + i) * hp + n * p + c)] * K[size_t((b * S + j) * gp + kh * p + c)];
          w[size_t(j)] = dot / std::sqrt(double(p)) -
                         (m.config.alibi ? alibi_slope_ref(n, h) * std::abs(double(offset + i - j)) : 0.0);
          mask[size_t(j)] = masked(b, i, j);
        }
        masked_softmax_ref(w, mask);
        for (int64_t j = 0; j < S; ++j) {
          if (weights) (*weights)[size_t(((b * h + n) * T + i) * S + j)] = w[size_t(j)];
          for (int64_t c = 0; c < p; ++c)
            heads[size_t((b * T + i) * hp + n * p + c)] += w[size_t(j)] * Vv[size_t((b * S + j) * gp + kh * p + c)];
        }
      }
  return linear_ref(heads, B * T, *m.o);
}

}  // namespace ks::testing
