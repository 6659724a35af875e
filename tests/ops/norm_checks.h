// tests/ops/norm_checks.h — the checks every row normalisation op passes
// (layer_norm, rms_norm): a float64 loop reference with and without weight and
// bias over 1 and 2 normalised dims, gradchecks over layouts, parameter
// gradients that do not depend on the thread count, and the shape and dtype
// refusals. Each op's own test file keeps what is particular to it (large
// offsets, second derivatives, its other errors).
// Not a test file: it only declares helpers.
#pragma once

#include <cmath>
#include <functional>
#include <string>

#include "support/testing.h"

namespace ks::testing {

// The op under test with every argument explicit: (x, normalized_shape, weight, bias, eps).
using NormOp = std::function<Tensor(const Tensor&, const Shape&, const Tensor&, const Tensor&, double)>;

// Loop reference over rows of length n, in long double:
//   centred:     (x - mean) / sqrt(var + eps) * w + b      (layer_norm)
//   not centred:  x / sqrt(mean(x²) + eps) * w + b          (rms_norm)
// w and b may be empty.
inline std::vector<double> norm_rows_ref(const std::vector<double>& x, int64_t n, const std::vector<double>& w,
                                         const std::vector<double>& b, double eps, bool centred) {
  std::vector<double> y(x.size());
  for (size_t r = 0; r < x.size() / size_t(n); ++r) {
    long double mean = 0, var = 0;
    if (centred) {
      for (int64_t i = 0; i < n; ++i) mean += x[r * n + i];
      mean /= n;
    }
    for (int64_t i = 0; i < n; ++i) var += (x[r * n + i] - mean) * (x[r * n + i] - mean);
    var /= n;
    for (int64_t i = 0; i < n; ++i) {
      long double v = (x[r * n + i] - mean) / std::sqrt(var + eps);
      if (!w.empty()) v *= w[size_t(i)];
      if (!b.empty()) v += b[size_t(i)];
      y[r * n + i] = double(v);
    }
  }
  return y;
}

// Forward against the reference in float64 and float32, over 1 and 2
// normalised dims, each of weight/bias present or absent, a permuted input and
// a row longer than any vector lane tail.
inline void check_norm_matches_reference(const NormOp& op, bool centred, uint64_t seed) {
  const Tensor none;
  Generator gen(seed);
  for (DType dt : {kFloat64, kFloat32}) {
    const double tol = dt == kFloat64 ? 1e-12 : 1e-5;
    Tensor x = add(mul(randn({2, 3, 4}, {.dtype = dt}, &gen), 2.0), 0.5);
    for (Shape ns : {Shape{4}, Shape{3, 4}}) {
      CAPTURE(ns);
      Tensor w = randn(ns, {.dtype = dt}, &gen), b = randn(ns, {.dtype = dt}, &gen);
      const int64_t n = numel_of(ns);
      auto xv = x.to_vector<double>(), wv = w.to_vector<double>(), bv = b.to_vector<double>();
      check_close(op(x, ns, none, none, 1e-5), norm_rows_ref(xv, n, {}, {}, 1e-5, centred), tol, tol);
      check_close(op(x, ns, w, none, 1e-5), norm_rows_ref(xv, n, wv, {}, 1e-5, centred), tol, tol);
      check_close(op(x, ns, none, b, 1e-5), norm_rows_ref(xv, n, {}, bv, 1e-5, centred), tol, tol);
      check_close(op(x, ns, w, b, 0.1), norm_rows_ref(xv, n, wv, bv, 0.1, centred), tol, tol);
    }
  }
  Tensor base = randn({4, 3, 2}, {.dtype = kFloat64}, &gen);
  Tensor p = permute(base, {2, 1, 0});
  check_close(op(p, {3, 4}, none, none, 1e-5), norm_rows_ref(p.to_vector<double>(), 12, {}, {}, 1e-5, centred), 1e-12,
              1e-12);
  Tensor wide = randn({3, 1001}, {}, &gen);
  check_close(op(wide, {1001}, none, none, 1e-5), norm_rows_ref(wide.to_vector<double>(), 1001, {}, {}, 1e-5, centred),
              1e-5, 1e-5);
}

// First-derivative gradchecks over every layout, with the input, the
// parameters or both needing grad, and with expanded (stride-0) arguments.
inline void check_norm_gradchecks(const NormOp& op, uint64_t seed) {
  using V = const std::vector<Tensor>&;
  const Tensor none;
  for (Layout l : all_layouts()) {
    CAPTURE(layout_name(l));
    Tensor x = leaf64({2, 3, 4}, seed, l, -2, 2);
    for (Shape ns : {Shape{4}, Shape{3, 4}}) {
      CAPTURE(ns);
      Tensor w = leaf64(ns, seed + 1, l, 0.5, 1.5), b = leaf64(ns, seed + 2, l);
      CHECK_GRADCHECK([&op, ns, none](V a) { return op(a[0], ns, none, none, 1e-5); }, {x});
      CHECK_GRADCHECK([&op, ns](V a) { return op(a[0], ns, a[1], a[2], 1e-5); }, {x, w, b});
      CHECK_GRADCHECK([&op, ns, none](V a) { return op(a[0], ns, a[1], none, 1e-5); }, {x, w});
      CHECK_GRADCHECK([&op, ns, none](V a) { return op(a[0], ns, none, a[1], 1e-5); }, {x, b});
    }
    // Only the parameters need grad (x is a constant here).
    Tensor xc = detach(leaf64({5, 4}, seed + 3, l));
    CHECK_GRADCHECK([&op, xc](V a) { return op(xc, {4}, a[0], a[1], 1e-5); },
                    {leaf64({4}, seed + 4, l), leaf64({4}, seed + 5, l)});
    CHECK_GRADCHECK([&op, xc, none](V a) { return op(xc, {4}, none, a[0], 1e-5); }, {leaf64({4}, seed + 6, l)});
  }
  Tensor v = leaf64({1, 4}, seed + 7), w = leaf64({1}, seed + 8, 0.5, 1.5);
  CHECK_GRADCHECK(
      [&op, none](V a) {
        return op(mul(expand(a[0], {3, 4}), 2.0), {4}, expand(a[1], {4}), none, 1e-5);
      },
      {v, w});
}

// The parameter gradients are column sums over 3000 rows: they must come out
// the same at one thread and at several (fixed-order reductions), and dbias is
// Σ_rows g.
inline void check_norm_param_grads_thread_independent(const NormOp& op, uint64_t seed) {
  Generator gen(seed);
  Tensor x = randn({3000, 48}, {}, &gen), g = randn({3000, 48}, {}, &gen);
  auto grads = [&](int threads) {
    set_num_threads(threads);
    Tensor xx = detach(x).set_requires_grad(true);
    Tensor w = ones({48}, {.requires_grad = true}), b = zeros({48}, {.requires_grad = true});
    backward(op(xx, {48}, w, b, 1e-5), g);
    return std::vector<std::vector<float>>{xx.grad().to_vector<float>(), w.grad().to_vector<float>(),
                                           b.grad().to_vector<float>()};
  };
  const int saved = num_threads();
  auto one = grads(1), many = grads(std::max(2, saved));
  set_num_threads(saved);
  CHECK(one == many);
  check_close(from_vector(one[2]), sum(g, {0}), 1e-4, 1e-5);
}

// The refusals every row norm words alike, each message led by the op's
// `name`: a normalized_shape that is not the input's last dims, a weight of
// another shape, a bias of another dtype, an integer input.
inline void check_norm_errors(const NormOp& op, const std::string& name) {
  const Tensor x = zeros({2, 3, 5});
  const std::string shape = name + ": normalized_shape [4, 5] does not match the last dims of input float32 [2, 3, 5]";
  const std::string weight = name + ": weight float32 [4] does not match normalized_shape [5]";
  const std::string bias = name + ": bias float64 [5] has a different dtype from input float32 [2, 3, 5]";
  const std::string integer = name + ": expected a floating tensor, got int64 [2, 3]";
  CHECK_THROWS_WITH_AS(op(x, {4, 5}, Tensor(), Tensor(), 1e-5), shape.c_str(), Error);
  CHECK_THROWS_WITH_AS(op(x, {5}, ones({4}), Tensor(), 1e-5), weight.c_str(), Error);
  CHECK_THROWS_WITH_AS(op(x, {5}, ones({5}), ones({5}, {.dtype = kFloat64}), 1e-5), bias.c_str(), Error);
  CHECK_THROWS_WITH_AS(op(zeros({2, 3}, {.dtype = kInt64}), {3}, Tensor(), Tensor(), 1e-5), integer.c_str(), Error);
}

}  // namespace ks::testing
