// tests/nn/attention_reference.h — plain-loop pieces shared by the attention
// tests: a Linear layer applied by explicit loops, and row-major index
// helpers. Everything runs in double on values read out of the module, so
// a reference never calls the ops it is checking. Not here: the attention
// formulas themselves, which each test file writes out from its paper.
#pragma once

#include <cmath>
#include <functional>
#include <vector>

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
