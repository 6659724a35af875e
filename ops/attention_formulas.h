// ops/attention_formulas.h — the geometry and dropout numbering that every
// fused attention kernel shares, CPU and CUDA, softmax (ops/attention.h) and
// mixture (ops/mixture_attention.h): which keys a query sees under the causal
// rule, the index of a weight in dropout()'s numbering of the (B, h, T, S)
// weights, and that weight's dropout factor; the key/value head a query head
// reads (grouped-query attention) and ALiBi's slopes and biases.
// Not here: the per-family formulas (softmax_formulas.h, mixture_attention_formulas.h).
#pragma once

#include <cmath>
#include <cstdint>

#include "core/host_device.h"
#include "core/random_values.h"
#include "ops/attention.h"

namespace ks::attention_formulas {

// How many keys of the tile [j0, j0 + cols) query i sees under the causal
// rule (j <= causal_offset + i): always a prefix of the tile.
KS_HOST_DEVICE inline int64_t visible_prefix(const SdpaParams& prm, int64_t i, int64_t j0, int64_t cols) {
  if (!prm.causal) return cols;
  const int64_t n = prm.causal_offset + i + 1 - j0;
  return n < 0 ? 0 : (n > cols ? cols : n);
}

// One past the last key any of the queries below i1 sees.
KS_HOST_DEVICE inline int64_t key_end(const SdpaParams& prm, int64_t i1, int64_t S) {
  if (!prm.causal) return S;
  const int64_t n = prm.causal_offset + i1;
  return n < 0 ? 0 : (n > S ? S : n);
}

// The sliding window (prm.window > 0, causal): the first key query i sees,
// causal_offset + i − window + 1 (0 without a window).
KS_HOST_DEVICE inline int64_t window_start(const SdpaParams& prm, int64_t i) {
  if (!prm.causal || prm.window <= 0) return 0;
  const int64_t n = prm.causal_offset + i - prm.window + 1;
  return n < 0 ? 0 : n;
}

// How many leading keys of the tile [j0, j0 + cols) the window hides from query i.
KS_HOST_DEVICE inline int64_t window_hidden(const SdpaParams& prm, int64_t i, int64_t j0, int64_t cols) {
  const int64_t n = window_start(prm, i) - j0;
  return n < 0 ? 0 : (n > cols ? cols : n);
}

// One past the last query that sees key j under the window (T without one).
KS_HOST_DEVICE inline int64_t window_query_end(const SdpaParams& prm, int64_t j, int64_t T) {
  if (!prm.causal || prm.window <= 0) return T;
  const int64_t n = j - prm.causal_offset + prm.window;
  return n < 0 ? 0 : (n > T ? T : n);
}

// The first query that sees key j0 (T if none does).
KS_HOST_DEVICE inline int64_t first_query(const SdpaParams& prm, int64_t j0, int64_t T) {
  if (!prm.causal) return 0;
  const int64_t i = j0 - prm.causal_offset;
  return i < 0 ? 0 : (i > T ? T : i);
}

// Weight (pair = b·h + head, i, j) of the (B, h, T, S) weights, as dropout()
// numbers its elements: element n is word n % 4 of Philox block first_block + n / 4.
KS_HOST_DEVICE inline uint64_t weight_index(int64_t pair, int64_t T, int64_t S, int64_t i, int64_t j) {
  return uint64_t((pair * T + i) * S + j);
}

// The dropout factor of weight n: 1/(1 − p) if kept, else 0.
template <class T> KS_HOST_DEVICE inline T drop_factor(const SdpaParams& prm, uint64_t n) {
  return bernoulli_element(prm.seed, prm.first_block, n, prm.keep) ? T(prm.drop_scale) : T(0);
}

// The (b, key/value head) pair that query pair b·h + n reads when each of the
// g key/value heads serves group = h / g query heads: b·g + n / group, which
// is pair / group because h = g·group.
KS_HOST_DEVICE inline int64_t kv_pair(int64_t pair, int64_t group) { return pair / group; }

// ALiBi's slope m of head n of h (Press et al. 2022, and their code): for h a
// power of two the geometric sequence 2^(−8(n+1)/h); otherwise the c = the
// largest power of two below h heads take c's sequence and the remaining
// h − c heads every other slope of 2c's (2^(−8(2k+1)/2c), k = 0, 1, ...).
KS_HOST_DEVICE inline double alibi_slope(int64_t n, int64_t h) {
  int64_t c = 1;
  while (c * 2 <= h) c *= 2;
  return n < c ? exp2(-8.0 * double(n + 1) / double(c)) : exp2(-8.0 * double(2 * (n - c) + 1) / double(2 * c));
}

// ALiBi's bias distance |i_abs − j| of query position i_abs and key j: the
// causal form −m·(i − j) over the keys a causal query sees, the symmetric
// −m·|i − j| otherwise (the bias is −slope · distance).
KS_HOST_DEVICE inline int64_t alibi_distance(int64_t i_abs, int64_t j) { return i_abs >= j ? i_abs - j : j - i_abs; }

}  // namespace ks::attention_formulas
