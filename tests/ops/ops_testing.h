// tests/ops/ops_testing.h — helpers that several files of the ops suite share:
// the run of a computation on one thread and on several (for the tests that
// results do not depend on the thread count), the gradchecks of the descriptor
// tables over layouts and an expanded input, and the attention ops' inputs:
// key padding and float64 leaves; a random leaf parameter and the bitwise
// comparison of two float tensors; values of varied exponents for sums. (The (B, 1, T, S) boolean mask of the keys a
// query may not see, for the composed references, is ops/attention_in_ops.h's.)
// Not here: helpers of one file, the suites' common ones (support/testing.h).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <utility>
#include <vector>

#include "ops/attention_in_ops.h"
#include "support/testing.h"

namespace ks::testing {

// count values of varied exponents (2^-3 to 2^3) and signs, the same for a seed: the order of a sum shows in
// their bits (the few-row products' tests, test_gemv.cpp and test_q8_0.cpp).
inline std::vector<float> varied_values(int64_t count, uint32_t seed) {
  std::vector<float> v(static_cast<size_t>(count));
  uint32_t s = seed * 2654435761u + 1u;
  for (auto& x : v) {
    s = s * 1664525u + 1013904223u;
    x = (float(s >> 8) / float(1 << 24) - 0.5f) * std::ldexp(1.f, int(s % 7) - 3);
  }
  return v;
}

// A leaf of standard normal values that requires grad.
inline Tensor param(const Shape& shape, Generator& gen) { return randn(shape, {}, &gen).set_requires_grad(true); }

// Whether a and b hold the same bits: dtype, shape, and every value read as
// float64 (exact for every float dtype and int32, so float64 is compared whole).
inline bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.sizes() != b.sizes()) return false;
  const std::vector<double> x = a.to_vector<double>(), y = b.to_vector<double>();
  return std::memcmp(x.data(), y.data(), x.size() * sizeof(double)) == 0;
}

// {f() on one thread, f() on at least two}; the thread count is put back.
template <class F> auto on_one_and_many_threads(F&& f) {
  const int saved = num_threads();
  set_num_threads(1);
  auto one = f();
  set_num_threads(std::max(2, saved));
  auto many = f();
  set_num_threads(saved);
  return std::pair{std::move(one), std::move(many)};
}

// Key padding (B, S) as bool, true at the (batch row b, key j) pairs of `hide`.
inline Tensor padding(int64_t B, int64_t S, const std::vector<std::pair<int64_t, int64_t>>& hide) {
  Tensor p = zeros({B, S}, {.dtype = kBool});
  for (auto [b, j] : hide) p.data<bool>()[b * S + j] = true;
  return p;
}

// Gradchecks and gradgradchecks f on float64 leaves of `shapes` (values in
// [lo, hi), seeds seed, seed + 1, ...) in every layout: how the descriptor
// tables (unary, binary, reduce-grad) check that a backward reads any strides.
inline void check_grads_over_layouts(const std::function<Tensor(const std::vector<Tensor>&)>& f,
                                     const std::vector<Shape>& shapes, uint64_t seed, double lo, double hi) {
  for (Layout l : all_layouts()) {
    CAPTURE(layout_name(l));
    std::vector<Tensor> in;
    for (size_t i = 0; i < shapes.size(); ++i) in.push_back(leaf64(shapes[i], seed + i, l, lo, hi));
    CHECK_GRADCHECK(f, in);
    CHECK_GRADGRADCHECK(f, in);
  }
}

// The same for f of one input seen expanded (stride 0) from `from` to `to`.
inline void check_grads_expanded(const std::function<Tensor(const Tensor&)>& f, const Shape& from, const Shape& to,
                                 uint64_t seed, double lo, double hi) {
  auto g = [f, to](const std::vector<Tensor>& a) { return f(expand(a[0], to)); };
  Tensor x = leaf64(from, seed, lo, hi);
  CHECK_GRADCHECK(g, {x});
  CHECK_GRADGRADCHECK(g, {x});
}

// Gradgradchecks the attention op `op(inputs, options)` under each of
// `options` (SdpaOptions-like: causal, dropout_p, gen), with a fresh generator
// of one seed in every call, so that dropout draws the same mask each time.
template <class Options, class Op>
void gradgradcheck_attention(const std::vector<Options>& options, Op op, const std::vector<Tensor>& inputs) {
  for (const Options& o : options) {
    CAPTURE(o.causal);
    CAPTURE(o.dropout_p);
    auto f = [o, op](const std::vector<Tensor>& a) {
      Generator gen(5);
      Options with_gen = o;
      with_gen.gen = &gen;
      return op(a, with_gen);
    };
    CHECK_GRADGRADCHECK(f, inputs);
  }
}

// A float64 leaf with values in [-2, 2), in layout l: the attention ops' inputs.
inline Tensor lf(const Shape& s, uint64_t seed, Layout l = Layout::Contiguous) { return leaf64(s, seed, l, -2, 2); }

}  // namespace ks::testing
