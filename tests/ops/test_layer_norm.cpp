// tests/ops/test_layer_norm.cpp — layer_norm: loop reference with and without
// weight/bias over 1 and 2 normalized dims, gradchecks over layouts, rows
// with a large common offset, thread-count independent parameter grads, errors.
#include <cmath>

#include "ops/layer_norm.h"
#include "support/testing.h"

using namespace ks;
using namespace ks::testing;

namespace {

// Loop reference over rows of length n: (x - mean) / sqrt(var + eps) * w + b (w, b may be empty).
std::vector<double> layer_norm_ref(const std::vector<double>& x, int64_t n, const std::vector<double>& w,
                                   const std::vector<double>& b, double eps) {
  std::vector<double> y(x.size());
  for (size_t r = 0; r < x.size() / size_t(n); ++r) {
    long double mean = 0, var = 0;
    for (int64_t i = 0; i < n; ++i) mean += x[r * n + i];
    mean /= n;
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

using V = const std::vector<Tensor>&;

}  // namespace

TEST_CASE("layer_norm matches a loop reference over 1 and 2 dims, with and without weight and bias") {
  Generator gen(31);
  for (DType dt : {kFloat64, kFloat32}) {
    const double tol = dt == kFloat64 ? 1e-12 : 1e-5;
    Tensor x = add(mul(randn({2, 3, 4}, {.dtype = dt}, &gen), 2.0), 0.5);
    for (Shape ns : {Shape{4}, Shape{3, 4}}) {
      CAPTURE(ns);
      Tensor w = randn(ns, {.dtype = dt}, &gen), b = randn(ns, {.dtype = dt}, &gen);
      const int64_t n = numel_of(ns);
      auto xv = x.to_vector<double>(), wv = w.to_vector<double>(), bv = b.to_vector<double>();
      check_close(layer_norm(x, ns), layer_norm_ref(xv, n, {}, {}, 1e-5), tol, tol);
      check_close(layer_norm(x, ns, w), layer_norm_ref(xv, n, wv, {}, 1e-5), tol, tol);
      check_close(layer_norm(x, ns, Tensor(), b), layer_norm_ref(xv, n, {}, bv, 1e-5), tol, tol);
      check_close(layer_norm(x, ns, w, b, 0.1), layer_norm_ref(xv, n, wv, bv, 0.1), tol, tol);
    }
  }
  // A permuted input and a long row (past the lane tails).
  Tensor base = randn({4, 3, 2}, {.dtype = kFloat64}, &gen);
  Tensor p = permute(base, {2, 1, 0});
  check_close(layer_norm(p, {3, 4}), layer_norm_ref(p.to_vector<double>(), 12, {}, {}, 1e-5), 1e-12, 1e-12);
  Tensor wide = randn({3, 1001}, {}, &gen);
  check_close(layer_norm(wide, {1001}), layer_norm_ref(wide.to_vector<double>(), 1001, {}, {}, 1e-5), 1e-5, 1e-5);
}

TEST_CASE("layer_norm gradchecks over layouts with and without weight and bias") {
  for (Layout l : all_layouts()) {
    CAPTURE(layout_name(l));
    Tensor x = leaf64({2, 3, 4}, 32, l, -2, 2);
    for (Shape ns : {Shape{4}, Shape{3, 4}}) {
      CAPTURE(ns);
      Tensor w = leaf64(ns, 33, l, 0.5, 1.5), b = leaf64(ns, 34, l);
      CHECK_GRADCHECK([ns](V a) { return layer_norm(a[0], ns); }, {x});
      CHECK_GRADCHECK([ns](V a) { return layer_norm(a[0], ns, a[1], a[2]); }, {x, w, b});
      CHECK_GRADCHECK([ns](V a) { return layer_norm(a[0], ns, a[1]); }, {x, w});
      CHECK_GRADCHECK([ns](V a) { return layer_norm(a[0], ns, Tensor(), a[1]); }, {x, b});
    }
    // Only the parameters need grad (x is a constant here).
    Tensor xc = detach(leaf64({5, 4}, 35, l));
    CHECK_GRADCHECK([xc](V a) { return layer_norm(xc, {4}, a[0], a[1]); }, {leaf64({4}, 36, l), leaf64({4}, 37, l)});
    CHECK_GRADCHECK([xc](V a) { return layer_norm(xc, {4}, Tensor(), a[0]); }, {leaf64({4}, 38, l)});
  }
  // Expanded input and weight.
  Tensor v = leaf64({1, 4}, 39), w = leaf64({1}, 40, 0.5, 1.5);
  CHECK_GRADCHECK([](V a) { return layer_norm(mul(expand(a[0], {3, 4}), 2.0), {4}, expand(a[1], {4})); }, {v, w});
}

TEST_CASE("layer_norm normalises rows with a large common offset in float32") {
  // 1e4 + noise of std 0.5: E[x²] - E[x]² would lose every digit of the variance in float32.
  Generator gen(41);
  Tensor x = add(mul(randn({4, 256}, {}, &gen), 0.5), 1e4);
  Tensor y = layer_norm(x, {256});
  check_close(y, layer_norm_ref(x.to_vector<double>(), 256, {}, {}, 1e-5), 1e-4, 1e-4);
  Tensor row_mean = div(sum(y, {1}), 256.0);
  Tensor row_var = div(sum(mul(y, y), {1}), 256.0);
  check_close(row_mean, {0, 0, 0, 0}, 1e-5);
  check_close(row_var, {1, 1, 1, 1}, 1e-3);
  // The gradients too: float32 against float64 on the same values, with a
  // spread (0.01) far below the offset (a float32-rounded mean would be off by
  // up to 5e-4 and put percent-level errors into dweight).
  Tensor xs = add(mul(randn({16, 128}, {}, &gen), 0.01), 1e4), g = randn({16, 128}, {}, &gen);
  Tensor x32 = detach(xs).set_requires_grad(true), x64 = detach(to(xs, kFloat64)).set_requires_grad(true);
  Tensor w32 = ones({128}, {.requires_grad = true}), w64 = ones({128}, {.dtype = kFloat64, .requires_grad = true});
  backward(layer_norm(x32, {128}, w32), g);
  backward(layer_norm(x64, {128}, w64), to(g, kFloat64));
  check_close(x32.grad(), x64.grad(), 1e-3, 1e-4);  // dx is O(rstd) = O(100)
  check_close(w32.grad(), w64.grad(), 1e-4, 1e-5);
  // A constant row has zero variance: the output is 0, not NaN.
  check_close(layer_norm(full({1, 8}, 1e4), {8}), std::vector<double>(8, 0.0));
}

TEST_CASE("layer_norm parameter gradients do not depend on the thread count") {
  Generator gen(42);
  Tensor x = randn({3000, 48}, {}, &gen), g = randn({3000, 48}, {}, &gen);
  auto grads = [&](int threads) {
    set_num_threads(threads);
    Tensor xx = detach(x).set_requires_grad(true);
    Tensor w = ones({48}, {.requires_grad = true}), b = zeros({48}, {.requires_grad = true});
    backward(layer_norm(xx, {48}, w, b), g);
    return std::vector<std::vector<float>>{xx.grad().to_vector<float>(), w.grad().to_vector<float>(),
                                           b.grad().to_vector<float>()};
  };
  const int saved = num_threads();
  auto one = grads(1), many = grads(std::max(2, saved));
  set_num_threads(saved);
  CHECK(one == many);
  // dbias is Σ_rows g.
  check_close(from_vector(one[2]), sum(g, {0}), 1e-4, 1e-5);
}

TEST_CASE("layer_norm rejects mismatched shapes and dtypes by name") {
  Tensor x = zeros({2, 3, 5});
  CHECK_THROWS_WITH_AS(layer_norm(x, {4, 5}),
                       "layer_norm: normalized_shape [4, 5] does not match the last dims of input float32 [2, 3, 5]",
                       Error);
  CHECK_THROWS_WITH_AS(layer_norm(x, {}), doctest::Contains("normalized_shape [] does not match"), Error);
  CHECK_THROWS_WITH_AS(layer_norm(x, {5}, ones({4})),
                       "layer_norm: weight float32 [4] does not match normalized_shape [5]", Error);
  CHECK_THROWS_WITH_AS(layer_norm(x, {5}, ones({5}), ones({5}, {.dtype = kFloat64})),
                       "layer_norm: bias float64 [5] has a different dtype from input float32 [2, 3, 5]", Error);
  CHECK_THROWS_WITH_AS(layer_norm(zeros({2, 3}, {.dtype = kInt64}), {3}),
                       "layer_norm: expected a floating tensor, got int64 [2, 3]", Error);
}
