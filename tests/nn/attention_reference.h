// tests/nn/attention_reference.h — what the attention module tests share:
// plain-loop pieces (a Linear layer applied by explicit loops, the masks as
// predicates, a masked softmax), the seeded typed build of a module, its
// random inputs and bool mask tensors, and the checks every family passes
// (cached self-attention step by step, a static cross-attention cache, the
// weights return_weights records). The references run in double on values
// read out of the module, so a reference never calls the ops it is checking.
// Not here: the attention formulas themselves, which each test file writes
// out from its paper.
#pragma once

#include <cmath>
#include <functional>
#include <memory>
#include <vector>

#include "nn/attention/attention.h"
#include "nn/layers.h"
#include "support/testing.h"

namespace ks::testing {

using Vec = std::vector<double>;

// y (n, out) = x (n, in) · Wᵀ + b, by loops, with the weights of `l`.
inline Vec linear_ref(const Vec& x, int64_t n, const nn::Linear& l) {
  const int64_t in = l.in_features, out = l.out_features;
  const Vec w = l.weight.to_vector<double>();
  const Vec b = l.bias.defined() ? l.bias.to_vector<double>() : Vec(size_t(out), 0.0);
  REQUIRE(int64_t(x.size()) == n * in);
  Vec y(static_cast<size_t>(n * out));
  for (int64_t r = 0; r < n; ++r)
    for (int64_t o = 0; o < out; ++o) {
      double acc = b[size_t(o)];
      for (int64_t c = 0; c < in; ++c) acc += x[size_t(r * in + c)] * w[size_t(o * in + c)];
      y[size_t(r * out + o)] = acc;
    }
  return y;
}

// masked(b, i, j): query i of batch b may not see key j.
using MaskFn = std::function<bool(int64_t b, int64_t i, int64_t j)>;
inline MaskFn no_mask() {
  return [](int64_t, int64_t, int64_t) { return false; };
}
// Causal: key j is hidden from query i when j > offset + i.
inline MaskFn causal_mask(int64_t offset = 0) {
  return [offset](int64_t, int64_t i, int64_t j) { return j > offset + i; };
}
// Key padding pad (B, S), nonzero where a key is hidden.
inline MaskFn padding_mask(const Tensor& pad) {
  std::vector<int> v;
  for (double x : pad.to_vector<double>()) v.push_back(x != 0);
  const int64_t S = pad.size(1);
  return [v, S](int64_t b, int64_t, int64_t j) { return v[size_t(b * S + j)] != 0; };
}

// nn::make_attention(c) after manual_seed(seed), as the module type M (the
// test fails if c builds another), moved to dtype dt.
template <class M> std::shared_ptr<M> seeded_attention(const nn::AttentionConfig& c, DType dt, uint64_t seed) {
  manual_seed(seed);
  auto m = std::dynamic_pointer_cast<M>(nn::make_attention(c));
  REQUIRE(m);
  m->to(dt);
  return m;
}

// The module's inputs: N(0, 1) values of `s` from seed; masks as bool
// tensors of `shape` from 0/1 values.
inline Tensor input(const Shape& s, uint64_t seed, DType dt = kFloat64) {
  Generator g(seed);
  return randn(s, {.dtype = dt}, &g);
}
inline Tensor bool_tensor(const std::vector<int>& values, const Shape& shape) {
  Tensor t = empty(shape, {.dtype = kBool});
  for (size_t i = 0; i < values.size(); ++i) t.data<bool>()[i] = values[i] != 0;
  return t;
}

// Causal self-attention over x (B, T, d) with key padding pad (B, T), decoded
// from a cache — a two-token prefill, then single tokens — equals the full
// forward; the cache then holds all T positions. Returned for the caller's
// checks of what the family keeps.
inline nn::AttentionCache check_cached_decoding(nn::Attention& m, const Tensor& x, const Tensor& pad) {
  Tensor full = m.forward(x, {.causal = true, .key_padding = pad});
  nn::AttentionCache cache;
  std::vector<Tensor> steps;
  steps.push_back(m.forward(narrow(x, 1, 0, 2), {.causal = true, .key_padding = narrow(pad, 1, 0, 2)}, &cache));
  for (int64_t t = 2; t < x.size(1); ++t)
    steps.push_back(m.forward(narrow(x, 1, t, 1), {.causal = true, .key_padding = narrow(pad, 1, t, 1)}, &cache));
  check_close(cat(steps, 1), full, 1e-12, 1e-10);
  CHECK(cache.length == x.size(1));
  return cache;
}

// Cross-attention of q (B, T, d) over mem (B, S, kv) with key padding pad
// (B, S) from a static cache: the first step projects the memory, later steps
// read neither it nor its padding (they pass `other`), and the steps equal the
// full forward. Returns the full output and the cache.
struct StaticCacheRun {
  Tensor full;
  nn::AttentionCache cache;
};
inline StaticCacheRun check_static_cache(nn::Attention& m, const Tensor& q, const Tensor& mem, const Tensor& pad,
                                         const Tensor& other) {
  StaticCacheRun r{m.forward(q, mem, mem, {.key_padding = pad}), {}};
  r.cache.is_static = true;
  std::vector<Tensor> steps;
  steps.push_back(m.forward(narrow(q, 1, 0, 1), mem, mem, {.key_padding = pad}, &r.cache));
  CHECK(r.cache.length == mem.size(1));
  for (int64_t t = 1; t < q.size(1); ++t) steps.push_back(m.forward(narrow(q, 1, t, 1), other, other, {}, &r.cache));
  check_close(cat(steps, 1), r.full, 1e-12, 1e-10);
  CHECK(r.cache.length == mem.size(1));
  return r;
}

// With return_weights, a causal forward over x (B, T, d) with key padding pad
// (B, T) records (B, h, T, T) probabilities, not tracked for gradients, each
// row summing to 1. Returned for the caller's check against its reference.
inline Tensor check_returned_weights(nn::Attention& m, const Tensor& x, const Tensor& pad) {
  m.return_weights = true;
  m.forward(x, {.causal = true, .key_padding = pad});
  Tensor w = m.record().weights;
  REQUIRE(w.defined());
  const int64_t B = x.size(0), h = m.config.heads, T = x.size(1);
  CHECK(w.sizes() == Shape{B, h, T, T});
  CHECK_FALSE(w.requires_grad());
  check_close(sum(w, {-1}), Vec(size_t(B * h * T), 1.0), 1e-12, 0);
  return w;
}

// Normalises w (n) in place as softmax over the entries not masked, from
// log-weights; masked entries (and every entry of a fully masked row) get 0.
inline void masked_softmax_ref(Vec& w, const std::vector<bool>& masked) {
  double m = -INFINITY;
  for (size_t j = 0; j < w.size(); ++j)
    if (!masked[j]) m = std::max(m, w[j]);
  double s = 0;
  for (size_t j = 0; j < w.size(); ++j) {
    w[j] = masked[j] ? 0.0 : std::exp(w[j] - m);
    s += w[j];
  }
  for (double& v : w) v = s > 0 ? v / s : 0.0;
}

}  // namespace ks::testing
