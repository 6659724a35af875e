// tests/ops/test_softmax.cpp — softmax / log_softmax: forward against a loop
// reference on every dim, gradchecks over layouts and dims, masked rows,
// large logits, and the vectorised exp the kernels use.
#include <cmath>
#include <limits>

#include "ops/cpu/row_math.h"
#include "ops/softmax.h"
#include "support/testing.h"

using namespace ks;
using namespace ks::testing;

namespace {

const double kInf = std::numeric_limits<double>::infinity();

// softmax of `x` (row-major values of `shape`) along `dim`, by explicit loops in long double.
std::vector<double> softmax_ref(const std::vector<double>& x, const Shape& shape, int64_t dim, bool log) {
  int64_t outer = 1, n = shape[size_t(dim)], inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= shape[size_t(d)];
  for (size_t d = size_t(dim) + 1; d < shape.size(); ++d) inner *= shape[d];
  std::vector<double> y(x.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t k) { return size_t((o * n + k) * inner + i); };
      long double m = -INFINITY, s = 0;
      for (int64_t k = 0; k < n; ++k) m = std::max<long double>(m, x[at(k)]);
      for (int64_t k = 0; k < n; ++k) s += std::exp((long double)x[at(k)] - m);
      for (int64_t k = 0; k < n; ++k)
        y[at(k)] = log ? double(x[at(k)] - m - std::log(s)) : double(std::exp(x[at(k)] - m) / s);
    }
  return y;
}

using V = const std::vector<Tensor>&;

}  // namespace

TEST_CASE("softmax and log_softmax match a loop reference on every dim") {
  const Shape shape{3, 4, 5};
  for (DType dt : {kFloat64, kFloat32}) {
    Generator gen(11);
    Tensor x = mul(randn(shape, {.dtype = dt}, &gen), 3.0);
    std::vector<double> xv = x.to_vector<double>();
    for (int64_t dim : {0, 1, 2}) {
      CAPTURE(dim);
      check_close(softmax(x, dim), softmax_ref(xv, shape, dim, false), 1e-6, 1e-5);
      check_close(log_softmax(x, dim), softmax_ref(xv, shape, dim, true), 1e-5, 1e-5);
      CHECK(softmax(x, dim).sizes() == shape);
    }
    check_close(softmax(x, -1), softmax_ref(xv, shape, 2, false), 1e-6, 1e-5);
  }
  // A non-contiguous input: the permuted view of a (5, 4, 3) tensor.
  Generator gen(12);
  Tensor base = randn({5, 4, 3}, {.dtype = kFloat64}, &gen);
  Tensor p = permute(base, {2, 1, 0});
  std::vector<double> pv = p.to_vector<double>();
  for (int64_t dim : {0, 1, 2}) check_close(softmax(p, dim), softmax_ref(pv, {3, 4, 5}, dim, false), 1e-12, 1e-10);
  // Rows longer than the kernels' lanes and tiles (tails of both).
  Tensor wide = mul(randn({3, 77, 131}, {.dtype = kFloat32}, &gen), 4.0);
  std::vector<double> wv = wide.to_vector<double>();
  check_close(softmax(wide, 2), softmax_ref(wv, {3, 77, 131}, 2, false), 1e-7, 1e-5);
  check_close(log_softmax(wide, 1), softmax_ref(wv, {3, 77, 131}, 1, true), 1e-5, 1e-5);
  // A 0-d tensor is a row of one.
  CHECK(softmax(scalar_tensor(3.0), 0).item() == 1.0);
  CHECK(log_softmax(scalar_tensor(3.0), -1).item() == 0.0);
}

TEST_CASE("softmax and log_softmax gradcheck on last, middle and first dim over layouts") {
  for (Layout l : all_layouts()) {
    CAPTURE(layout_name(l));
    Tensor x = leaf64({3, 4, 5}, 21, l, -3, 3);
    for (int64_t dim : {-1, 1, 0}) {
      CAPTURE(dim);
      CHECK_GRADCHECK([dim](V a) { return softmax(a[0], dim); }, {x});
      CHECK_GRADCHECK([dim](V a) { return log_softmax(a[0], dim); }, {x});
    }
  }
  // An expanded input (stride 0 along the softmax dim and across rows).
  Tensor v = leaf64({1, 4}, 22);
  CHECK_GRADCHECK([](V a) { return softmax(mul(expand(a[0], {3, 4}), a[0]), 0); }, {v});
  CHECK_GRADCHECK([](V a) { return log_softmax(expand(a[0], {3, 4}), 1); }, {v});
  // The gradient arriving from a broadcasting op is itself strided.
  Tensor w = leaf64({4, 3}, 23);
  CHECK_GRADCHECK([](V a) { return sum(mul(softmax(a[0], 0), a[0]), {1}); }, {w});
}

TEST_CASE("softmax of large logits is exact and fully masked rows give zeros, not NaN") {
  for (DType dt : {kFloat32, kFloat64}) {
    check_close(softmax(tensor({1000, 1000}, {1, 2}, {.dtype = dt}), -1), {0.5, 0.5});
    check_close(log_softmax(tensor({1000, 1000}, {1, 2}, {.dtype = dt}), -1), {-std::log(2.0), -std::log(2.0)});
    check_close(softmax(tensor({-1000, 0}, {2}, {.dtype = dt}), 0), {0.0, 1.0});
    // Row 0 fully masked, row 1 partly masked.
    Tensor x = tensor({-kInf, -kInf, -kInf, -kInf, 0, 0}, {2, 3}, {.dtype = dt, .requires_grad = true});
    check_close(softmax(x, 1), {0, 0, 0, 0, 0.5, 0.5});
    check_close(log_softmax(x, 1), {-kInf, -kInf, -kInf, -kInf, -std::log(2.0), -std::log(2.0)});
    // The same rows as columns (the tiled kernel).
    Tensor xt = detach(transpose(x, 0, 1));
    xt.set_requires_grad(true);
    check_close(softmax(xt, 0), {0, 0, 0, 0.5, 0, 0.5});
    check_close(log_softmax(xt, 0), {-kInf, -kInf, -kInf, -std::log(2.0), -kInf, -std::log(2.0)});
    // Zero gradient through the masked row; the ordinary formula elsewhere:
    // d/dx_j Σ_i w_i log_softmax_i = w_j - softmax_j Σ w.
    Tensor g = tensor({1, 2, 3, 1, 2, 3}, {2, 3}, {.dtype = dt});
    backward(log_softmax(x, 1), g);
    check_close(x.grad(), {0, 0, 0, 1, -1, 0});
    backward(softmax(xt, 0), transpose(g, 0, 1));
    // softmax row [0.5, 0.5] over g [2, 3]: y·(g - Σ g·y) = [-0.25, 0.25]; masked entries 0.
    check_close(xt.grad(), {0, 0, 0, -0.25, 0, 0.25});
    xt.set_grad(Tensor());
    backward(log_softmax(xt, 0), transpose(g, 0, 1));
    check_close(xt.grad(), {0, 1, 0, -1, 0, 0});
    x.set_grad(Tensor());
    backward(softmax(x, 1), g);
    check_close(x.grad(), {0, 0, 0, 0, -0.25, 0.25});
  }
  // Long float32 rows still sum to 1 (the sums accumulate in double).
  Generator gen(24);
  Tensor wide = mul(randn({2, 50000}, {}, &gen), 10.0);
  check_close(sum(softmax(wide, 1), {1}), {1, 1}, 1e-5);
  // NaN is not hidden by the masking rule.
  std::vector<double> nan_row = softmax(tensor({std::nan(""), 1.0}, {2}), 0).to_vector<double>();
  CHECK(std::isnan(nan_row[0]));
  CHECK(std::isnan(nan_row[1]));
}

TEST_CASE("softmax rejects non-floating inputs and bad dims") {
  CHECK_THROWS_WITH_AS(softmax(zeros({2, 3}, {.dtype = kInt64}), 1),
                       "softmax: expected a floating tensor, got int64 [2, 3]", Error);
  CHECK_THROWS_WITH_AS(log_softmax(zeros({2, 3}), 2), "log_softmax: dim 2 out of range for a 2-d tensor", Error);
}
