// tests/ops/test_rope.cpp — rope: a loop reference of HF's rotate_half form in
// long double (offset, (T,) and (B, T) positions, θ, far positions in
// float32), the relative-position property, inverse ∘ rope = identity,
// gradchecks and gradgradchecks over layouts, errors.
#include <cmath>

#include "ops/ops_testing.h"
#include "ops/rope.h"
#include "support/testing.h"

using namespace ks;
using namespace ks::testing;

namespace {

using V = const std::vector<Tensor>&;

// HF's apply_rotary_pos_emb on x (rows of T positions × p), in long double:
// cos/sin of pos · θ^(-2i/p) repeated over both halves, x·cos + rotate_half(x)·sin,
// rotate_half(x) = (−x₂, x₁). pos(r, t): the position of row r's step t.
template <class Pos>
std::vector<double> rope_ref(const std::vector<double>& x, int64_t rows_per_t, int64_t T, int64_t p, double theta,
                             Pos pos) {
  std::vector<double> y(x.size());
  const int64_t half = p / 2, rows = int64_t(x.size()) / p;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t t = r % T;
    const long double position = pos(r / (rows_per_t * T), t);
    for (int64_t i = 0; i < half; ++i) {
      const long double inv_freq = 1.0L / std::pow((long double)theta, (long double)(2 * i) / p);
      const long double c = std::cos(position * inv_freq), s = std::sin(position * inv_freq);
      const long double x1 = x[size_t(r * p + i)], x2 = x[size_t(r * p + i + half)];
      y[size_t(r * p + i)] = double(x1 * c - x2 * s);
      y[size_t(r * p + i + half)] = double(x2 * c + x1 * s);
    }
  }
  return y;
}

}  // namespace

TEST_CASE("rope matches HF's rotate_half reference: offset, positions (T,) and (B, T), theta") {
  Generator gen(5);
  for (DType dt : {kFloat64, kFloat32}) {
    CAPTURE(dt);
    const double tol = dt == kFloat64 ? 1e-13 : 2e-6;
    Tensor x = randn({2, 3, 5, 8}, {.dtype = dt}, &gen);  // (B, h, T, p)
    const auto xv = x.to_vector<double>();
    for (double theta : {10000.0, 500.0}) {
      CAPTURE(theta);
      check_close(rope(x, {.theta = theta}), rope_ref(xv, 3, 5, 8, theta, [](int64_t, int64_t t) { return t; }), tol,
                  tol);
      check_close(rope(x, {.theta = theta, .offset = 7}),
                  rope_ref(xv, 3, 5, 8, theta, [](int64_t, int64_t t) { return 7 + t; }), tol, tol);
      const std::vector<int64_t> pt{4, 0, -2, 9, 9};
      check_close(rope(x, {.theta = theta, .positions = from_vector(pt, {5})}),
                  rope_ref(xv, 3, 5, 8, theta, [&](int64_t, int64_t t) { return pt[size_t(t)]; }), tol, tol);
      const std::vector<int64_t> pbt{0, 1, 2, 3, 4, 3, 4, 5, 6, 7};
      check_close(rope(x, {.theta = theta, .positions = from_vector(pbt, {2, 5})}),
                  rope_ref(xv, 3, 5, 8, theta, [&](int64_t b, int64_t t) { return pbt[size_t(b * 5 + t)]; }), tol, tol);
    }
  }
  // A permuted input (the layout split_heads gives), a 2-D one, and MGK's (B, h, M, S, p) keys.
  Tensor base = randn({2, 5, 3, 6}, {.dtype = kFloat64}, &gen);
  Tensor perm = transpose(base, 1, 2);  // (2, 3, 5, 6), not contiguous
  check_close(rope(perm, {.offset = 2}),
              rope_ref(perm.to_vector<double>(), 3, 5, 6, 1e4, [](int64_t, int64_t t) { return 2 + t; }), 1e-13, 1e-13);
  Tensor flat = randn({4, 10}, {.dtype = kFloat64}, &gen);
  check_close(rope(flat, {.offset = 1}),
              rope_ref(flat.to_vector<double>(), 1, 4, 10, 1e4, [](int64_t, int64_t t) { return 1 + t; }), 1e-13,
              1e-13);
  Tensor mgk = randn({2, 3, 2, 4, 6}, {.dtype = kFloat64}, &gen);
  const std::vector<int64_t> pbt{5, 6, 7, 8, 0, 1, 2, 3};
  check_close(
      rope(mgk, {.positions = from_vector(pbt, {2, 4})}),
      rope_ref(mgk.to_vector<double>(), 6, 4, 6, 1e4, [&](int64_t b, int64_t t) { return pbt[size_t(b * 4 + t)]; }),
      1e-13, 1e-13);
}

TEST_CASE("rope in float32 at far positions keeps float32 accuracy (angles in float64)") {
  Generator gen(6);
  Tensor x = randn({1, 2, 3, 64}, {}, &gen);
  Tensor y = rope(x, {.offset = 200000});
  check_close(y, rope_ref(x.to_vector<double>(), 2, 3, 64, 1e4, [](int64_t, int64_t t) { return 200000 + t; }), 2e-6,
              2e-6);
}

TEST_CASE("rope: scores depend on the distance only, and inverse undoes it") {
  Generator gen(7);
  Tensor q = randn({1, 1, 1, 16}, {.dtype = kFloat64}, &gen), k = randn({1, 1, 1, 16}, {.dtype = kFloat64}, &gen);
  auto score = [&](int64_t m, int64_t n) { return sum(mul(rope(q, {.offset = m}), rope(k, {.offset = n}))).item(); };
  CHECK(score(3, 1) == doctest::Approx(score(103, 101)).epsilon(1e-12));
  CHECK(score(0, 5) == doctest::Approx(score(40, 45)).epsilon(1e-12));
  CHECK(score(3, 1) != doctest::Approx(score(3, 2)).epsilon(1e-6));
  Tensor x = randn({2, 4, 8}, {.dtype = kFloat64}, &gen);
  check_close(rope(rope(x, {.offset = 9}), {.offset = 9, .inverse = true}), x, 1e-14, 1e-14);
}

TEST_CASE("rope gradchecks and gradgradchecks over layouts, with offsets and positions") {
  const Tensor pos = from_vector(std::vector<int64_t>{3, 1, 4}, {3});
  check_grads_over_layouts([](V a) { return rope(a[0], {.offset = 2}); }, {{2, 3, 4}}, 11, -1, 1);
  check_grads_over_layouts([pos](V a) { return rope(a[0], {.theta = 50, .positions = pos}); }, {{2, 3, 6}}, 12, -1, 1);
  // Second derivatives that are not zero: rope(x)·x, and rope of a product.
  check_grads_over_layouts([](V a) { return mul(rope(a[0], {.offset = 5}), a[0]); }, {{2, 3, 4}}, 13, -1, 1);
  check_grads_over_layouts([](V a) { return rope(mul(a[0], a[1]), {.inverse = true}); }, {{2, 3, 4}, {2, 3, 4}}, 14, -1,
                           1);
}

TEST_CASE("rope errors name the op and the problem") {
  CHECK_THROWS_WITH_AS(rope(zeros({2, 3, 5})), doctest::Contains("rope: the last dim (the head size) must be even"),
                       Error);
  CHECK_THROWS_WITH_AS(rope(zeros({2, 4}), {.theta = 0}), doctest::Contains("rope: theta must be > 0"), Error);
  CHECK_THROWS_WITH_AS(rope(zeros({4}, {.dtype = kInt64})), doctest::Contains("rope: expected a floating tensor"),
                       Error);
  CHECK_THROWS_WITH_AS(rope(zeros({2, 3, 4}), {.positions = from_vector(std::vector<int64_t>{0, 1}, {2})}),
                       doctest::Contains("rope: positions must be (T,) or (B, T) with T = 3, B = 2"), Error);
  CHECK_THROWS_WITH_AS(rope(zeros({2, 3, 4}), {.positions = zeros({3})}),
                       doctest::Contains("rope: positions must be int64"), Error);
}
