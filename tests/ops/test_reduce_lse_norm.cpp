// tests/ops/test_reduce_lse_norm.cpp — logsumexp and norm: loop references
// over dim sets and layouts, stability and edge values, gradients (softmax;
// zero norms), gradchecks and errors.
#include <cmath>

#include "ops/reduce_reference.h"

using namespace ks;
using namespace ks::testing;

namespace {
using V = const std::vector<Tensor>&;

double plain_lse(const std::vector<double>& g) {
  double s = 0;
  for (double v : g) s += std::exp(v);
  return std::log(s);
}
double plain_norm(const std::vector<double>& g, double p) {
  double r = 0;
  if (p == INFINITY || p == -INFINITY) {
    r = std::fabs(g[0]);
    for (double v : g) r = p > 0 ? std::max(r, std::fabs(v)) : std::min(r, std::fabs(v));
    return r;
  }
  for (double v : g) r += p == 0 ? double(v != 0) : std::pow(std::fabs(v), p);
  return p == 0 ? r : std::pow(r, 1 / p);
}
}  // namespace

TEST_CASE("logsumexp and norm match loop references") {
  for (const Tensor& x : reduce_inputs(71, -2, 2))
    for (const Dims& d : dim_sets()) {
      CAPTURE(describe(x));
      CAPTURE(dims_name(d));
      check_close(logsumexp(x, d), reduce_reference(x, d, plain_lse), 1e-12);
      for (double p : {2.0, 1.0, 3.0, 0.5, 0.0, double(INFINITY), -double(INFINITY)}) {
        CAPTURE(p);
        check_close(norm(x, d, {.p = p}), reduce_reference(x, d, [p](auto& g) { return plain_norm(g, p); }), 1e-12);
      }
    }
  Tensor f = tensor({3, 4, 0, 0}, {2, 2});
  check_close(norm(f, {1}), {5, 0});
  CHECK(norm(f).item<float>() == 5);
  CHECK(norm(f, {}, {.p = 0}).item<float>() == 2);
  CHECK(norm(zeros({0}), {}, {.p = INFINITY}).item() == 0);
}

TEST_CASE("logsumexp is stable and handles infinities") {
  check_close(logsumexp(tensor({1000, 1000, -1000, -1000}, {2, 2}), {1}),
              {1000 + std::log(2.0), -1000 + std::log(2.0)});
  Tensor t = tensor({-INFINITY, -INFINITY, -INFINITY, 0, INFINITY, 1, NAN, 1}, {4, 2});
  std::vector<double> r = logsumexp(t, {1}).to_vector<double>();
  CHECK(r[0] == -INFINITY);  // not NaN
  CHECK(r[1] == 0);
  CHECK(r[2] == INFINITY);
  CHECK(std::isnan(r[3]));
  CHECK(logsumexp(zeros({2, 0}), {1}).to_vector<float>() == std::vector<float>{-INFINITY, -INFINITY});
  // Long rows and columns in float32 (chunked paths): log(n * e^0.5) = 0.5 + log n.
  check_close(logsumexp(full({2, 200000}, 0.5), {1}), {0.5 + std::log(2e5), 0.5 + std::log(2e5)}, 1e-5);
  check_close(logsumexp(full({200000, 2}, 0.5), {0}), {0.5 + std::log(2e5), 0.5 + std::log(2e5)}, 1e-5);
}

TEST_CASE("logsumexp gradient is softmax, zero for an all -inf row") {
  Tensor x = tensor({0, std::log(3.0), -INFINITY, -INFINITY}, {2, 2}, {.dtype = kFloat64, .requires_grad = true});
  backward(sum(logsumexp(x, {1})));
  check_close(x.grad(), {0.25, 0.75, 0, 0});
  for (Layout l : all_layouts()) {
    CAPTURE(layout_name(l));
    Tensor y = leaf64({3, 4, 5}, 72, l, -2, 2);
    for (bool keep : {false, true}) {
      CAPTURE(keep);
      CHECK_GRADCHECK([keep](V a) { return logsumexp(a[0], {2}, keep); }, {y});
      CHECK_GRADCHECK([keep](V a) { return logsumexp(a[0], {0, 1}, keep); }, {y});
    }
    CHECK_GRADCHECK([](V a) { return logsumexp(a[0], {}); }, {y});
  }
  Tensor v = leaf64({1, 4}, 73);
  Tensor w = leaf64({3, 1}, 74);
  CHECK_GRADCHECK([](V a) { return logsumexp(add(expand(a[0], {3, 4}), a[1]), {1}); }, {v, w});
}

TEST_CASE("norm gradcheck for several p, zero norms give zero gradients") {
  for (Layout l : all_layouts()) {
    CAPTURE(layout_name(l));
    Tensor y = leaf64({3, 4, 5}, 81, l, -1.2, 1.2);  // mixed signs, (almost surely) no zeros or ties
    for (double p : {2.0, 1.0, 3.0, 1.5, double(INFINITY), -double(INFINITY)}) {
      CAPTURE(p);
      CHECK_GRADCHECK([p](V a) { return norm(a[0], {1}, {.p = p}); }, {y});
      CHECK_GRADCHECK([p](V a) { return norm(a[0], {0, 2}, {.p = p, .keepdim = true}); }, {y});
    }
    CHECK_GRADCHECK([](V a) { return norm(a[0]); }, {y});
  }
  Tensor v = leaf64({1, 4}, 82);
  CHECK_GRADCHECK([](V a) { return norm(expand(a[0], {3, 4}), {0}); }, {v});
  // At x = 0 the 2-norm is not differentiable; the gradient is defined as 0
  // (PyTorch's choice), never NaN. p = 0 has gradient 0 everywhere.
  for (double p : {2.0, 3.0, 0.5, 0.0}) {
    CAPTURE(p);
    Tensor z = zeros({2, 3}, {.dtype = kFloat64, .requires_grad = true});
    backward(sum(norm(z, {1}, {.p = p})));
    for (double g : z.grad().to_vector<double>()) CHECK(g == 0);
  }
  // p = inf splits the gradient among ties, with the sign of each element.
  Tensor t = tensor({-2, 2, 1}, {3}, {.dtype = kFloat64, .requires_grad = true});
  backward(norm(t, {}, {.p = INFINITY}));
  check_close(t.grad(), {-0.5, 0.5, 0});
}

TEST_CASE("logsumexp and norm reject bad dims, dtypes and p by name") {
  CHECK_THROWS_WITH_AS(logsumexp(zeros({2}, {.dtype = kInt64}), {0}),
                       "logsumexp: expected a float32, float64, bfloat16 or float16 tensor, got int64 [2]", Error);
  CHECK_THROWS_WITH_AS(logsumexp(zeros({2, 3}), {5}), "logsumexp: dim 5 out of range for a 2-d tensor", Error);
  CHECK_THROWS_WITH_AS(norm(zeros({2}), {}, {.p = -1}), "norm: p must be positive, 0 or ±inf, got -1", Error);
  CHECK_THROWS_WITH_AS(norm(zeros({2}), {}, {.p = NAN}), doctest::Contains("norm: p must be positive"), Error);
  CHECK_THROWS_WITH_AS(logsumexp(zeros({2, 3}), {0, -2}), "logsumexp: dim -2 appears more than once in [0, -2]", Error);
  CHECK_THROWS_WITH_AS(norm(zeros({2, 2}), {1, 1}), "norm: dim 1 appears more than once in [1, 1]", Error);
  CHECK_THROWS_WITH_AS(norm(zeros({2, 2}), {-3}), "norm: dim -3 out of range for a 2-d tensor", Error);
  CHECK_THROWS_WITH_AS(norm(zeros({2}, {.dtype = kInt32})),
                       "norm: expected a float32, float64, bfloat16 or float16 tensor, got int32 [2]", Error);
}
