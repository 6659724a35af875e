// tests/ops/test_rms_norm.cpp — rms_norm: a float64 loop reference with and
// without weight/bias over 1 and 2 normalized dims, gradchecks (and
// gradgradchecks) over layouts, thread-count independent parameter grads,
// float32 against float64 on the same values, errors.
#include <cmath>

#include "ops/rms_norm.h"
#include "support/testing.h"

using namespace ks;
using namespace ks::testing;

namespace {

// Loop reference over rows of length n: x / sqrt(mean(x²) + eps) * w + b (w, b may be empty).
std::vector<double> rms_norm_ref(const std::vector<double>& x, int64_t n, const std::vector<double>& w,
                                 const std::vector<double>& b, double eps) {
  std::vector<double> y(x.size());
  for (size_t r = 0; r < x.size() / size_t(n); ++r) {
    long double ms = 0;
    for (int64_t i = 0; i < n; ++i) ms += (long double)x[r * n + i] * x[r * n + i];
    ms /= n;
    for (int64_t i = 0; i < n; ++i) {
      long double v = x[r * n + i] / std::sqrt(ms + eps);
      if (!w.empty()) v *= w[size_t(i)];
      if (!b.empty()) v += b[size_t(i)];
      y[r * n + i] = double(v);
    }
  }
  return y;
}

using V = const std::vector<Tensor>&;

}  // namespace

TEST_CASE("rms_norm matches a float64 loop reference over 1 and 2 dims, with and without weight and bias") {
  Generator gen(51);
  for (DType dt : {kFloat64, kFloat32}) {
    const double tol = dt == kFloat64 ? 1e-12 : 1e-5;
    Tensor x = add(mul(randn({2, 3, 4}, {.dtype = dt}, &gen), 2.0), 0.5);
    for (Shape ns : {Shape{4}, Shape{3, 4}}) {
      CAPTURE(ns);
      Tensor w = randn(ns, {.dtype = dt}, &gen), b = randn(ns, {.dtype = dt}, &gen);
      const int64_t n = numel_of(ns);
      auto xv = x.to_vector<double>(), wv = w.to_vector<double>(), bv = b.to_vector<double>();
      check_close(rms_norm(x, ns), rms_norm_ref(xv, n, {}, {}, 1e-6), tol, tol);
      check_close(rms_norm(x, ns, w), rms_norm_ref(xv, n, wv, {}, 1e-6), tol, tol);
      check_close(rms_norm(x, ns, Tensor(), b), rms_norm_ref(xv, n, {}, bv, 1e-6), tol, tol);
      check_close(rms_norm(x, ns, w, b, 0.1), rms_norm_ref(xv, n, wv, bv, 0.1), tol, tol);
    }
  }
  // A permuted input, a long row (past the lane tails), a zero row (0, not NaN, with eps > 0).
  Tensor base = randn({4, 3, 2}, {.dtype = kFloat64}, &gen);
  Tensor p = permute(base, {2, 1, 0});
  check_close(rms_norm(p, {3, 4}), rms_norm_ref(p.to_vector<double>(), 12, {}, {}, 1e-6), 1e-12, 1e-12);
  Tensor wide = randn({3, 1001}, {}, &gen);
  check_close(rms_norm(wide, {1001}, Tensor(), Tensor(), 1e-5),
              rms_norm_ref(wide.to_vector<double>(), 1001, {}, {}, 1e-5), 1e-5, 1e-5);
  check_close(rms_norm(zeros({1, 8}), {8}), std::vector<double>(8, 0.0));
  // Unlike layer_norm, a common offset is kept: a constant row normalises to ones.
  check_close(rms_norm(full({1, 8}, 3.0), {8}, Tensor(), Tensor(), 0.0), std::vector<double>(8, 1.0), 1e-6);
}

TEST_CASE("rms_norm gradchecks and gradgradchecks over layouts with and without weight and bias") {
  for (Layout l : all_layouts()) {
    CAPTURE(layout_name(l));
    Tensor x = leaf64({2, 3, 4}, 52, l, -2, 2);
    for (Shape ns : {Shape{4}, Shape{3, 4}}) {
      CAPTURE(ns);
      Tensor w = leaf64(ns, 53, l, 0.5, 1.5), b = leaf64(ns, 54, l);
      CHECK_GRADCHECK([ns](V a) { return rms_norm(a[0], ns); }, {x});
      CHECK_GRADCHECK([ns](V a) { return rms_norm(a[0], ns, a[1], a[2]); }, {x, w, b});
      CHECK_GRADCHECK([ns](V a) { return rms_norm(a[0], ns, a[1]); }, {x, w});
      CHECK_GRADCHECK([ns](V a) { return rms_norm(a[0], ns, Tensor(), a[1]); }, {x, b});
    }
    // Only the parameters need grad (x is a constant here).
    Tensor xc = detach(leaf64({5, 4}, 55, l));
    CHECK_GRADCHECK([xc](V a) { return rms_norm(xc, {4}, a[0], a[1]); }, {leaf64({4}, 56, l), leaf64({4}, 57, l)});
    CHECK_GRADCHECK([xc](V a) { return rms_norm(xc, {4}, Tensor(), a[0]); }, {leaf64({4}, 58, l)});
  }
  // Expanded input and weight.
  Tensor v = leaf64({1, 4}, 59), w = leaf64({1}, 60, 0.5, 1.5);
  CHECK_GRADCHECK([](V a) { return rms_norm(mul(expand(a[0], {3, 4}), 2.0), {4}, expand(a[1], {4})); }, {v, w});
  // Second derivatives (the create_graph backward recomputes in ops).
  auto f = [](V a) { return rms_norm(a[0], {4}, a[1], a[2], 1e-5); };
  std::vector<Tensor> in = {leaf64({3, 4}, 61), leaf64({4}, 62, 0.5, 1.5), leaf64({4}, 63)};
  CHECK_GRADGRADCHECK(f, in);
  auto g = [](V a) { return mul(rms_norm(a[0], {2, 3}), a[0]); };
  CHECK_GRADGRADCHECK(g, {leaf64({2, 2, 3}, 64)});
}

TEST_CASE("rms_norm in float32 agrees with float64 on the same values, forward and backward") {
  Generator gen(65);
  Tensor xs = mul(randn({16, 128}, {}, &gen), 3.0), g = randn({16, 128}, {}, &gen);
  Tensor x32 = detach(xs).set_requires_grad(true), x64 = detach(to(xs, kFloat64)).set_requires_grad(true);
  Tensor w32 = detach(add(mul(randn({128}, {}, &gen), 0.1), 1.0)).set_requires_grad(true);
  Tensor w64 = detach(to(w32, kFloat64)).set_requires_grad(true);
  Tensor y32 = rms_norm(x32, {128}, w32), y64 = rms_norm(x64, {128}, w64);
  check_close(y32, y64, 1e-6, 1e-6);
  backward(y32, g);
  backward(y64, to(g, kFloat64));
  check_close(x32.grad(), x64.grad(), 1e-6, 1e-6);
  check_close(w32.grad(), w64.grad(), 1e-5, 1e-6);
}

TEST_CASE("rms_norm parameter gradients do not depend on the thread count") {
  Generator gen(66);
  Tensor x = randn({3000, 48}, {}, &gen), g = randn({3000, 48}, {}, &gen);
  auto grads = [&](int threads) {
    set_num_threads(threads);
    Tensor xx = detach(x).set_requires_grad(true);
    Tensor w = ones({48}, {.requires_grad = true}), b = zeros({48}, {.requires_grad = true});
    backward(rms_norm(xx, {48}, w, b), g);
    return std::vector<std::vector<float>>{xx.grad().to_vector<float>(), w.grad().to_vector<float>(),
                                           b.grad().to_vector<float>()};
  };
  const int saved = num_threads();
  auto one = grads(1), many = grads(std::max(2, saved));
  set_num_threads(saved);
  CHECK(one == many);
  check_close(from_vector(one[2]), sum(g, {0}), 1e-4, 1e-5);  // dbias is Σ_rows g
}

TEST_CASE("rms_norm rejects mismatched shapes and dtypes by name") {
  Tensor x = zeros({2, 3, 5});
  CHECK_THROWS_WITH_AS(rms_norm(x, {4, 5}),
                       "rms_norm: normalized_shape [4, 5] does not match the last dims of input float32 [2, 3, 5]",
                       Error);
  CHECK_THROWS_WITH_AS(rms_norm(x, {5}, ones({4})), "rms_norm: weight float32 [4] does not match normalized_shape [5]",
                       Error);
  CHECK_THROWS_WITH_AS(rms_norm(x, {5}, ones({5}), ones({5}, {.dtype = kFloat64})),
                       "rms_norm: bias float64 [5] has a different dtype from input float32 [2, 3, 5]", Error);
  CHECK_THROWS_WITH_AS(rms_norm(zeros({2, 3}, {.dtype = kInt64}), {3}),
                       "rms_norm: expected a float32 or float64 tensor, got int64 [2, 3]", Error);
  CHECK_THROWS_WITH_AS(rms_norm(x, {5}, Tensor(), Tensor(), -1.0), "rms_norm: eps must be >= 0, got -1", Error);
}
