// tests/ops/test_scan.cpp — cumsum: forward against explicit loops along every
// dim and layout, float32 precision on long scans, the (B, T, D) path of
// causal linear attention, gradchecks and error texts.
#include "support/testing.h"

using namespace ks;
using namespace ks::testing;
using V = const std::vector<Tensor>&;

namespace {

// cumsum of a (A, B, C) tensor along dim by explicit loops, in double.
std::vector<double> cumsum_reference(const Tensor& x, int64_t dim) {
  const int64_t A = x.size(0), B = x.size(1), C = x.size(2);
  std::vector<double> v = x.to_vector<double>(), out(v.size());
  auto at = [&](int64_t a, int64_t b, int64_t c) { return size_t((a * B + b) * C + c); };
  for (int64_t a = 0; a < A; ++a)
    for (int64_t b = 0; b < B; ++b)
      for (int64_t c = 0; c < C; ++c) {
        double s = 0;
        if (dim == 0)
          for (int64_t t = 0; t <= a; ++t) s += v[at(t, b, c)];
        if (dim == 1)
          for (int64_t t = 0; t <= b; ++t) s += v[at(a, t, c)];
        if (dim == 2)
          for (int64_t t = 0; t <= c; ++t) s += v[at(a, b, t)];
        out[at(a, b, c)] = s;
      }
  return out;
}

// max |a - e| / (1 + |e|) over all elements.
double worst_error(const Tensor& actual, const Tensor& expected) {
  REQUIRE(actual.sizes() == expected.sizes());
  std::vector<double> a = actual.to_vector<double>(), e = expected.to_vector<double>();
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::fabs(a[i] - e[i]) / (1 + std::fabs(e[i])));
  return worst;
}

}  // namespace

TEST_CASE("cumsum matches a loop reference along every dim and layout") {
  for (Layout l : all_layouts()) {
    CAPTURE(layout_name(l));
    Tensor x = detach(leaf64({3, 4, 5}, 1, l));
    for (int64_t d = 0; d < 3; ++d) {
      CAPTURE(d);
      check_close(cumsum(x, d), cumsum_reference(x, d), 1e-12);
      check_close(cumsum(x, d - 3), cumsum_reference(x, d), 1e-12);
    }
  }
  check_close(cumsum(tensor({1, 2, 3, 4}, {4}, {.dtype = kInt64}), 0), {1, 3, 6, 10});
  check_close(cumsum(tensor({1, 2, 3, 4}, {2, 2}, {.dtype = kInt32}), 0), {1, 2, 4, 6});
  CHECK(cumsum(scalar_tensor(3), -1).item() == 3);
  CHECK(cumsum(zeros({2, 0, 3}), 1).sizes() == Shape{2, 0, 3});
}

TEST_CASE("cumsum keeps float32 digits on long scans and big (B, T, D) inputs") {
  // A naive float32 running sum of 0.1 drifts by ~1e-3 relative after 2^20 steps.
  Tensor c = cumsum(full({1 << 20}, 0.1), 0);
  CHECK(c.to_vector<double>().back() == doctest::Approx(104857.6).epsilon(1e-7));
  // Along T of (B, T, D): blocks of D run in parallel; compare with float64
  // (one check per tensor: these are large).
  Tensor x = randn({2, 1000, 256});
  Tensor want = cumsum(to(x, kFloat64), 1);
  CHECK(worst_error(cumsum(x, 1), want) < 1e-6);
  // A transposed (B, D, T) view scanned along T, and many short lines.
  CHECK(worst_error(cumsum(transpose(x, 1, 2), 2), transpose(want, 1, 2)) < 1e-6);
  CHECK(worst_error(cumsum(x, -1), cumsum(to(x, kFloat64), -1)) < 1e-6);
}

TEST_CASE("cumsum gradchecks: backward is a reverse scan") {
  for (Layout l : all_layouts()) {
    CAPTURE(layout_name(l));
    Tensor x = leaf64({2, 3, 4}, 2, l);
    CHECK_GRADCHECK([](V t) { return cumsum(t[0], 1); }, {x});
    CHECK_GRADCHECK([](V t) { return cumsum(t[0], -1); }, {x});
    CHECK_GRADCHECK([](V t) { return mul(cumsum(t[0], 0), t[0]); }, {x});
  }
  Tensor v = leaf64({1, 4}, 3);
  CHECK_GRADCHECK([](V t) { return cumsum(expand(t[0], {3, 4}), 0); }, {v});
  // The gradient of sum(cumsum(x)) at position s is the number of t >= s.
  Tensor x = zeros({4}, {.requires_grad = true});
  backward(sum(cumsum(x, 0)));
  check_close(x.grad(), {4, 3, 2, 1});
}

TEST_CASE("cumsum errors") {
  CHECK_THROWS_WITH_AS(cumsum(zeros({2, 3}), 2), "cumsum: dim 2 out of range for a 2-d tensor", Error);
  CHECK_THROWS_WITH_AS(cumsum(zeros({2}, {.dtype = kBool}), 0),
                       "cumsum: expected a numeric tensor (float32, float64, int64, int32), got bool", Error);
}
