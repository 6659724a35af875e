// tests/tools/test_analysis_math.cpp — the numerical core of `keystone
// analyze` (tools/analyze/analysis_math.h) on cases with known answers: entropy and
// Jensen–Shannon divergence of identical, disjoint and hand-computed
// distributions; cosine of parallel, orthogonal and antiparallel vectors and
// the zero-vector conventions; singular values of diagonal, hand-solved,
// low-rank and transposed matrices; numerical and effective ranks; and the
// errors bad inputs raise.
// Not here: the `keystone analyze` command (reading runs, printing).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <random>
#include <vector>

#include "core/error.h"
#include "tools/analyze/analysis_math.h"

using namespace ks::tools::analysis;
using V = std::vector<double>;

namespace {

constexpr double kLn2 = std::numbers::ln2;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double js(const V& p, const V& q) {
  REQUIRE(p.size() == q.size());
  return js_divergence(p.data(), q.data(), int64_t(p.size()));
}
double cosine(const V& a, const V& b) {
  REQUIRE(a.size() == b.size());
  return cosine_similarity(a.data(), b.data(), int64_t(a.size()));
}
double entropy_of(const V& p) { return entropy(p.data(), int64_t(p.size())); }
V svd(const V& a, int64_t rows, int64_t cols) {
  REQUIRE(int64_t(a.size()) == rows * cols);
  return singular_values(a.data(), rows, cols);
}

// A row-major (rows, cols) matrix of uniform [-1, 1) entries.
V random_matrix(int64_t rows, int64_t cols, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  V a(size_t(rows * cols));
  for (double& x : a) x = u(gen);
  return a;
}

V transpose(const V& a, int64_t rows, int64_t cols) {
  V t(a.size());
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) t[size_t(j * rows + i)] = a[size_t(i * cols + j)];
  return t;
}

double frobenius_squared(const V& a) {
  double s = 0;
  for (double x : a) s += x * x;
  return s;
}

}  // namespace

TEST_CASE("analysis math: entropy of uniform, one-hot and half-half distributions") {
  CHECK(entropy_of({1.0}) == 0);
  CHECK(entropy_of({0.0, 1.0, 0.0}) == 0);  // 0 · ln 0 = 0
  CHECK(entropy_of({0.5, 0.5, 0.0}) == doctest::Approx(kLn2));
  CHECK(entropy_of(V(8, 0.125)) == doctest::Approx(std::log(8.0)));
  CHECK(entropy_of({0.7, 0.2, 0.1}) ==
        doctest::Approx(-(0.7 * std::log(0.7) + 0.2 * std::log(0.2) + 0.1 * std::log(0.1))));
}

TEST_CASE("analysis math: JS divergence is 0 for identical and ln 2 for disjoint distributions") {
  const V p{0.1, 0.2, 0.3, 0.4};
  CHECK(js(p, p) == 0);  // exactly: M = P term by term
  CHECK(js({1.0}, {1.0}) == 0);
  CHECK(js({1.0, 0.0}, {0.0, 1.0}) == doctest::Approx(kLn2));
  CHECK(js({0.5, 0.5, 0.0, 0.0}, {0.0, 0.0, 0.25, 0.75}) == doctest::Approx(kLn2));
  // Overlapping on one half of P's mass: M = (1/4, 1/2, 1/4), each KL is ½ ln 2.
  CHECK(js({0.5, 0.5, 0.0}, {0.0, 0.5, 0.5}) == doctest::Approx(0.5 * kLn2));
}

TEST_CASE("analysis math: JS divergence is symmetric and matches a hand-computed 3-element case") {
  const V p{0.5, 0.3, 0.2}, q{0.1, 0.6, 0.3};
  // M = (0.3, 0.45, 0.25).
  const double kl_pm = 0.5 * std::log(0.5 / 0.3) + 0.3 * std::log(0.3 / 0.45) + 0.2 * std::log(0.2 / 0.25);
  const double kl_qm = 0.1 * std::log(0.1 / 0.3) + 0.6 * std::log(0.6 / 0.45) + 0.3 * std::log(0.3 / 0.25);
  const double expected = 0.5 * kl_pm + 0.5 * kl_qm;
  CHECK(expected == doctest::Approx(0.10329452541507406));  // the same sum in Python
  CHECK(js(p, q) == doctest::Approx(expected).epsilon(1e-12));
  CHECK(js(q, p) == doctest::Approx(js(p, q)).epsilon(1e-15));
  // Lin (1991): JS = H(M) − (H(P) + H(Q)) / 2.
  CHECK(js(p, q) == doctest::Approx(entropy_of({0.3, 0.45, 0.25}) - 0.5 * (entropy_of(p) + entropy_of(q))));
  const double d = js(p, q);
  CHECK(d > 0);
  CHECK(d < kLn2);
}

TEST_CASE("analysis math: probability vectors are checked, never renormalised") {
  const V good{0.5, 0.5};
  CHECK_THROWS_WITH_AS(js({1.1, -0.1}, good), "js_divergence: p: entry 1 is -0.1, a negative probability", ks::Error);
  CHECK_THROWS_WITH_AS(js(good, {kNaN, 1.0}), doctest::Contains("js_divergence: q: entry 0 is"), ks::Error);
  CHECK_THROWS_WITH_AS(js(good, {kNaN, 1.0}), doctest::Contains("not a finite probability"), ks::Error);
  const double inf = std::numeric_limits<double>::infinity();
  CHECK_THROWS_WITH_AS(entropy_of({inf, 0.0}), doctest::Contains("entropy: p: entry 0 is inf"), ks::Error);
  CHECK_THROWS_WITH_AS(entropy_of({2.0, 3.0}), doctest::Contains("entries sum to 5, not 1"), ks::Error);
  CHECK_THROWS_WITH_AS(js({0.25, 0.25}, good), doctest::Contains("js_divergence: p: entries sum to 0.5"), ks::Error);
  CHECK_THROWS_WITH_AS(entropy(nullptr, 0), doctest::Contains("at least one entry"), ks::Error);
  // Within the tolerance the inputs are taken as they are (a float32 softmax row).
  const double f = double(1.0f / 3.0f);
  CHECK(entropy_of({f, f, f}) == doctest::Approx(std::log(3.0)).epsilon(1e-6));
  const double d = js({f, f, f}, {1.0, 0.0, 0.0});
  CHECK(d >= 0);
  CHECK(d <= kLn2);
}

TEST_CASE("analysis math: cosine of parallel, orthogonal and antiparallel vectors") {
  CHECK(cosine({1, 2, 3}, {2, 4, 6}) == doctest::Approx(1.0));
  CHECK(cosine({1, 2, 3}, {1, 2, 3}) <= 1.0);  // never rounds past 1
  CHECK(cosine({1, 0, 0}, {0, 5, 0}) == 0);
  CHECK(cosine({1, 1}, {1, -1}) == 0);
  CHECK(cosine({1, -2, 3}, {-3, 6, -9}) == doctest::Approx(-1.0));
  CHECK(cosine({1, -2, 3}, {-3, 6, -9}) >= -1.0);
  CHECK(cosine({1, 2, 3}, {4, 5, 6}) == doctest::Approx(32.0 / (std::sqrt(14.0) * std::sqrt(77.0))));
  // Scaled by the largest entry, so huge and tiny vectors neither overflow nor vanish.
  CHECK(cosine({3e300, 4e300}, {3e-300, 4e-300}) == doctest::Approx(1.0));
  CHECK(cosine({1e300, 0}, {1e300, 1e300}) == doctest::Approx(1.0 / std::sqrt(2.0)));
}

TEST_CASE("analysis math: cosine of zero vectors is 1 for two and 0 for one, and NaN is refused") {
  CHECK(cosine({0, 0, 0}, {0, 0, 0}) == 1);
  CHECK(cosine({}, {}) == 1);
  CHECK(cosine({0, 0}, {1, 2}) == 0);
  CHECK(cosine({1, 2}, {0, 0}) == 0);
  CHECK_THROWS_WITH_AS(cosine({1, kNaN}, {1, 2}), doctest::Contains("cosine_similarity: a: entry 1 is"), ks::Error);
  CHECK_THROWS_WITH_AS(cosine({1, 2}, {1, kNaN}), doctest::Contains("not finite"), ks::Error);
}

TEST_CASE("analysis math: singular values of diagonal matrices are the sorted absolute diagonal") {
  // (4, 4): diag(3, -7, 0.5, 0).
  const V d{3, 0, 0, 0, 0, -7, 0, 0, 0, 0, 0.5, 0, 0, 0, 0, 0};
  const V s = svd(d, 4, 4);
  REQUIRE(s.size() == 4);
  CHECK(s[0] == doctest::Approx(7));
  CHECK(s[1] == doctest::Approx(3));
  CHECK(s[2] == doctest::Approx(0.5));
  CHECK(std::abs(s[3]) < 1e-15);
  // (3, 5), a rectangular diagonal.
  V r(15, 0.0);
  r[0] = 2;
  r[1 * 5 + 1] = -5;
  r[2 * 5 + 2] = 1;
  const V sr = svd(r, 3, 5);
  REQUIRE(sr.size() == 3);
  CHECK(sr[0] == doctest::Approx(5));
  CHECK(sr[1] == doctest::Approx(2));
  CHECK(sr[2] == doctest::Approx(1));
}

TEST_CASE("analysis math: singular values of a 2x3 matrix match the hand-computed 5 and 3") {
  // A Aᵀ = [[17, 8], [8, 17]], eigenvalues 25 and 9.
  const V a{3, 2, 2, 2, 3, -2};
  const V s = svd(a, 2, 3);
  REQUIRE(s.size() == 2);
  CHECK(s[0] == doctest::Approx(5).epsilon(1e-14));
  CHECK(s[1] == doctest::Approx(3).epsilon(1e-14));
  const V st = svd(transpose(a, 2, 3), 3, 2);
  REQUIRE(st.size() == 2);
  CHECK(st[0] == doctest::Approx(5).epsilon(1e-14));
  CHECK(st[1] == doctest::Approx(3).epsilon(1e-14));
  CHECK(a == V{3, 2, 2, 2, 3, -2});  // the input is not overwritten
}

TEST_CASE("analysis math: singular values of rows < cols and rows > cols equal their transpose's") {
  for (auto shape : {std::pair<int64_t, int64_t>{7, 4}, {4, 7}, {1, 6}, {6, 1}, {200, 150}}) {
    const int64_t rows = shape.first, cols = shape.second;  // not a structured binding: CAPTURE's lambda (clang 14)
    CAPTURE(rows);
    CAPTURE(cols);
    const V a = random_matrix(rows, cols, uint64_t(rows * 1000 + cols));
    const V s = svd(a, rows, cols), st = svd(transpose(a, rows, cols), cols, rows);
    REQUIRE(s.size() == size_t(std::min(rows, cols)));
    REQUIRE(st.size() == s.size());
    CHECK(std::is_sorted(s.rbegin(), s.rend()));
    double sum_sq = 0;
    for (size_t i = 0; i < s.size(); ++i) {
      CHECK(st[i] == doctest::Approx(s[i]).epsilon(1e-12));
      sum_sq += s[i] * s[i];
    }
    CHECK(sum_sq == doctest::Approx(frobenius_squared(a)).epsilon(1e-12));  // Σσ² = ‖A‖_F²
  }
  // A single row's one singular value is its norm.
  const V s = svd({3, 0, -4}, 1, 3);
  REQUIRE(s.size() == 1);
  CHECK(s[0] == doctest::Approx(5));
}

TEST_CASE("analysis math: a product of 50x2 and 2x40 random factors has numerical rank 2") {
  const int64_t m = 50, k = 2, n = 40;
  const V x = random_matrix(m, k, 1), y = random_matrix(k, n, 2);
  V a(size_t(m * n), 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t l = 0; l < k; ++l) a[size_t(i * n + j)] += x[size_t(i * k + l)] * y[size_t(l * n + j)];
  const V s = svd(a, m, n);
  REQUIRE(s.size() == 40);
  CHECK(numerical_rank(s, 1e-10) == 2);
  CHECK(s[1] > 1e-10 * s[0]);
  CHECK(s[2] <= 1e-10 * s[0]);
  CHECK(s[0] * s[0] + s[1] * s[1] == doctest::Approx(frobenius_squared(a)).epsilon(1e-12));
  CHECK(effective_rank(s) > 1);
  CHECK(effective_rank(s) < 2.0 + 1e-9);
}

TEST_CASE("analysis math: singular values of empty and 1x1 matrices, and bad inputs") {
  CHECK(svd({}, 0, 5).empty());
  CHECK(svd({}, 3, 0).empty());
  CHECK(singular_values(nullptr, 0, 0).empty());
  const V one = svd({-2.5}, 1, 1);
  REQUIRE(one.size() == 1);
  CHECK(one[0] == 2.5);
  const V zero = svd({0.0}, 1, 1);
  REQUIRE(zero.size() == 1);
  CHECK(zero[0] == 0);
  CHECK_THROWS_WITH_AS(svd({1, 2, kNaN, 4}, 2, 2), doctest::Contains("singular_values: a: entry 2 is"), ks::Error);
  CHECK_THROWS_WITH_AS(singular_values(nullptr, -1, 2), "singular_values: negative shape [-1, 2]", ks::Error);
  CHECK_THROWS_WITH_AS(singular_values(nullptr, int64_t(1) << 31, 1), doctest::Contains("32-bit int"), ks::Error);
}

TEST_CASE("analysis math: numerical rank counts values above rel_tol times the largest") {
  CHECK(numerical_rank({5, 3, 1e-12}, 1e-10) == 2);
  CHECK(numerical_rank({5, 3, 1e-12}, 0) == 3);
  CHECK(numerical_rank({5, 3, 0}, 0) == 2);
  CHECK(numerical_rank({1e-12, 3, 5}, 1e-10) == 2);  // any order
  CHECK(numerical_rank({4, 2, 1}, 0.5) == 1);        // strictly greater: 2 = 0.5 · 4 is not counted
  CHECK(numerical_rank({4, 2, 1}, 1) == 0);
  CHECK(numerical_rank({0, 0, 0}, 1e-10) == 0);
  CHECK(numerical_rank({0, 0, 0}, 0) == 0);
  CHECK(numerical_rank({}, 1e-10) == 0);
  CHECK_THROWS_WITH_AS(numerical_rank({1, 2}, -1), "numerical_rank: rel_tol is -1, not a finite value >= 0", ks::Error);
  CHECK_THROWS_WITH_AS(numerical_rank({1, -2}, 0.1), "numerical_rank: singular value 1 is -2, negative", ks::Error);
  CHECK_THROWS_WITH_AS(numerical_rank({kNaN}, 0.1), doctest::Contains("not finite"), ks::Error);
}

TEST_CASE("analysis math: effective rank of k equal values is k and of one nonzero value is 1") {
  for (int k = 1; k <= 6; ++k) {
    CAPTURE(k);
    CHECK(effective_rank(V(size_t(k), 2.5)) == doctest::Approx(k).epsilon(1e-12));
  }
  CHECK(effective_rank({4, 4, 4, 0, 0}) == doctest::Approx(3).epsilon(1e-12));  // zeros add nothing
  CHECK(effective_rank({7, 0, 0}) == 1);
  CHECK(effective_rank({1e-3}) == 1);
  CHECK(effective_rank({0, 0}) == 0);
  CHECK(effective_rank({}) == 0);
  // p = (3/4, 1/4).
  const double h = -(0.75 * std::log(0.75) + 0.25 * std::log(0.25));
  CHECK(effective_rank({3, 1}) == doctest::Approx(std::exp(h)));
  CHECK(effective_rank({1, 3}) == doctest::Approx(std::exp(h)));
  CHECK(effective_rank({3e307, 1e307, 1e307, 1e307}) == doctest::Approx(effective_rank({3, 1, 1, 1})));  // no overflow
  CHECK_THROWS_WITH_AS(effective_rank({1, -1}), "effective_rank: singular value 1 is -1, negative", ks::Error);
}
