// tests/ops/test_reduce_stats.cpp — mean, var, stddev and prod: loop
// references over dim sets and layouts, numerics, gradchecks and errors.
#include <cmath>
#include <functional>

#include "ops/reduce_reference.h"

using namespace ks;
using namespace ks::testing;

namespace {
using V = const std::vector<Tensor>&;

double plain_mean(const std::vector<double>& g) {
  double s = 0;
  for (double v : g) s += v;
  return s / double(g.size());
}
double plain_var(const std::vector<double>& g, double correction) {
  double m = plain_mean(g), s = 0;
  for (double v : g) s += (v - m) * (v - m);
  return s / (double(g.size()) - correction);
}
double plain_prod(const std::vector<double>& g) {
  double p = 1;
  for (double v : g) p *= v;
  return p;
}
}  // namespace

TEST_CASE("mean, var, stddev and prod match loop references") {
  for (const Tensor& x : reduce_inputs(21, 0.5, 1.5))
    for (const Dims& d : dim_sets()) {
      CAPTURE(describe(x));
      CAPTURE(dims_name(d));
      check_close(mean(x, d), reduce_reference(x, d, plain_mean), 1e-12);
      for (double c : {0.0, 1.0}) {
        CAPTURE(c);
        check_close(var(x, d, {.correction = c}), reduce_reference(x, d, [c](auto& g) { return plain_var(g, c); }),
                    1e-12);
        check_close(stddev(x, d, {.correction = c}),
                    reduce_reference(x, d, [c](auto& g) { return std::sqrt(plain_var(g, c)); }), 1e-12);
        CHECK(stddev(x, d, {.correction = c, .keepdim = true}).dim() == 3);
      }
      check_close(prod(x, d), reduce_reference(x, d, plain_prod), 1e-12, 1e-10);
    }
  Tensor x = tensor({1, 2, 3, 4}, {2, 2});
  CHECK(mean(x).item() == 2.5);
  CHECK(var(x).item() == doctest::Approx(5.0 / 3));
  check_close(var(x, {1}, {.correction = 0, .keepdim = true}), {0.25, 0.25});
  CHECK(var(x, {1}, {.correction = 0, .keepdim = true}).sizes() == Shape{2, 1});
  CHECK(prod(x).item() == 24);
  check_close(prod(x, {0}), {3, 8});
}

TEST_CASE("reductions of empty and single-element ranges") {
  CHECK(std::isnan(mean(zeros({0})).item()));
  CHECK(prod(zeros({0, 2}), {0}).to_vector<float>() == std::vector<float>{1, 1});
  CHECK(std::isnan(var(ones({1})).item()));  // n - correction = 0
  CHECK(var(ones({1}), {}, {.correction = 0}).item() == 0);
  CHECK(mean(scalar_tensor(3)).item() == 3);
  CHECK(mean(scalar_tensor(3), {0}).item() == 3);  // a 0-d tensor accepts dim 0
}

TEST_CASE("var and stddev of a slice holding NaN or inf are NaN, as PyTorch") {
  // The centred sums are NaN there (x - mean is NaN or inf - inf); clamping
  // M2 at 0 must not turn that into 0. Rows (x (2, 40) over dim 1, the
  // contiguous fast path) and columns (over dim 0); the clean slice stays finite.
  for (DType dt : {kFloat32, kFloat64})
    for (double bad : {double(NAN), double(INFINITY), -double(INFINITY)}) {
      CAPTURE(bad);
      std::vector<double> v(80);
      for (size_t i = 0; i < v.size(); ++i) v[i] = double(i % 7);
      v[13] = bad;  // row 0, column 13
      Tensor x = to(from_vector(v, {2, 40}), dt);
      for (const Tensor& y : {var(x, {1}), stddev(x, {1}, {.correction = 0}), var(transpose(x, 0, 1), {0})}) {
        CAPTURE(describe(y));
        std::vector<double> r = to(y, kFloat64).to_vector<double>();
        CHECK(std::isnan(r[0]));
        CHECK(std::isfinite(r[1]));
      }
    }
}

TEST_CASE("var is two-pass: a large offset does not cancel its digits") {
  // E[x²] - E[x]² would lose every digit here even in double (x² ~ 1e18 with
  // ulp 128, var ~ 1); two passes keep them. Rows and columns both.
  Tensor x = add(randn({2, 100000}, {.dtype = kFloat64}), 1e9);
  std::vector<double> ref = reduce_reference(x, {1}, [](auto& g) { return plain_var(g, 1); });
  CHECK(ref[0] == doctest::Approx(1).epsilon(0.05));
  check_close(var(x, {1}), ref, 0, 1e-9);
  check_close(var(transpose(x, 0, 1), {0}), ref, 0, 1e-9);
  check_close(stddev(x, {1}), {std::sqrt(ref[0]), std::sqrt(ref[1])}, 0, 1e-9);
  Tensor f = add(randn({100000}), 1e4);  // float32, accumulated in double
  CHECK(var(f).item() ==
        doctest::Approx(reduce_reference(f, {}, [](auto& g) { return plain_var(g, 1); })[0]).epsilon(1e-6));
  // prod of int64 accumulates in int64.
  CHECK(prod(view(arange(1, 11, 1, {.dtype = kInt64}), {2, 5}), {1}).to_vector<int64_t>() ==
        std::vector<int64_t>{120, 30240});
}

TEST_CASE("mean, var, stddev and prod gradcheck") {
  for (Layout l : all_layouts()) {
    CAPTURE(layout_name(l));
    Tensor x = leaf64({3, 4, 5}, 31, l, 0.5, 1.5);
    for (bool keep : {false, true}) {
      CAPTURE(keep);
      CHECK_GRADCHECK([keep](V a) { return mean(a[0], {1}, keep); }, {x});
      CHECK_GRADCHECK([keep](V a) { return mean(a[0], {0, 2}, keep); }, {x});
      CHECK_GRADCHECK([keep](V a) { return var(a[0], {2}, {.correction = 1, .keepdim = keep}); }, {x});
      CHECK_GRADCHECK([keep](V a) { return var(a[0], {0, 1}, {.correction = 0, .keepdim = keep}); }, {x});
      CHECK_GRADCHECK([keep](V a) { return stddev(a[0], {1}, {.keepdim = keep}); }, {x});
      CHECK_GRADCHECK([keep](V a) { return prod(a[0], {2}, keep); }, {x});
      CHECK_GRADCHECK([keep](V a) { return prod(a[0], {0, 1}, keep); }, {x});
    }
    CHECK_GRADCHECK([](V a) { return mean(a[0]); }, {x});
    CHECK_GRADCHECK([](V a) { return var(a[0]); }, {x});
    CHECK_GRADCHECK([](V a) { return stddev(a[0], {}, {.correction = 0}); }, {x});
  }
  // Expanded and broadcast inputs.
  Tensor v = leaf64({1, 4}, 32, 0.5, 1.5);
  Tensor w = leaf64({3, 1}, 33, 0.5, 1.5);
  CHECK_GRADCHECK([](V a) { return var(expand(a[0], {3, 4}), {0, 1}); }, {v});
  CHECK_GRADCHECK([](V a) { return prod(mul(a[0], a[1]), {1}); }, {v, w});
}

TEST_CASE("prod and stddev gradients at zeros") {
  // One zero in a row: only that element gets a gradient (the product of the
  // others); two zeros: no gradient at all. The exact formula, not g*y/x.
  Tensor x = leaf64({3, 4}, 41);
  double* p = x.data<double>();
  p[1] = 0;          // row 0: one zero
  p[8] = p[10] = 0;  // row 2: two zeros
  CHECK_GRADCHECK([](V a) { return prod(a[0], {1}); }, {x});
  Tensor y = prod(x, {1});
  backward(sum(y));
  std::vector<double> g = x.grad().to_vector<double>();
  CHECK(g[1] == doctest::Approx(p[0] * p[2] * p[3]));
  CHECK(g[0] == 0);
  for (int k = 8; k < 12; ++k) CHECK(g[size_t(k)] == 0);
  // A constant row has stddev 0: gradient 0, not NaN (as PyTorch).
  Tensor c = full({2, 3}, 1.5, {.dtype = kFloat64, .requires_grad = true});
  backward(sum(stddev(c, {1})));
  for (double v : c.grad().to_vector<double>()) CHECK(v == 0);
}

TEST_CASE("mean, var, stddev and prod reject bad dims and dtypes by name") {
  using Op = std::function<Tensor(const Tensor&, const Dims&)>;
  const std::vector<std::pair<const char*, Op>> ops = {
      {"mean", [](const Tensor& x, const Dims& d) { return mean(x, d); }},
      {"var", [](const Tensor& x, const Dims& d) { return var(x, d); }},
      {"stddev", [](const Tensor& x, const Dims& d) { return stddev(x, d); }},
      {"prod", [](const Tensor& x, const Dims& d) { return prod(x, d); }},
  };
  for (const auto& named_op : ops) {
    const auto& name = named_op.first;  // not a structured binding: clang 14 cannot capture one in CAPTURE's lambda
    const auto& op = named_op.second;
    CAPTURE(name);
    CHECK_THROWS_WITH_AS(op(zeros({2, 3}), {2}), str(name, ": dim 2 out of range for a 2-d tensor").c_str(), Error);
    CHECK_THROWS_WITH_AS(op(zeros({2, 3}), {-3}), str(name, ": dim -3 out of range for a 2-d tensor").c_str(), Error);
    CHECK_THROWS_WITH_AS(op(zeros({2, 3}), {1, -1}), str(name, ": dim -1 appears more than once in [1, -1]").c_str(),
                         Error);
  }
  CHECK_THROWS_WITH_AS(mean(zeros({2}, {.dtype = kInt64})),
                       "mean: expected a float32, float64, bfloat16 or float16 tensor, got int64 [2]", Error);
  CHECK_THROWS_WITH_AS(var(zeros({2}, {.dtype = kInt32})),
                       "var: expected a float32, float64, bfloat16 or float16 tensor, got int32 [2]", Error);
  CHECK_THROWS_WITH_AS(stddev(zeros({2}, {.dtype = kBool})),
                       "stddev: expected a float32, float64, bfloat16 or float16 tensor, got bool [2]", Error);
  CHECK(prod(zeros({2}, {.dtype = kFloat16})).dtype() == kFloat16);  // every dtype: 16-bit ones in float32
  CHECK_THROWS_WITH_AS(var(zeros({2}), {}, {.correction = INFINITY}), "var: correction must be finite, got inf", Error);
}
