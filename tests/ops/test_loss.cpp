// tests/ops/test_loss.cpp — cross_entropy, nll_loss and mse_loss: loop
// references for every reduction, ignore_index, label smoothing and 3-D
// logits; gradchecks over layouts; large logits; all-ignored batches; errors.
#include <cmath>

#include "ops/loss.h"
#include "ops/softmax.h"
#include "support/testing.h"

using namespace ks;
using namespace ks::testing;

namespace {
using V = const std::vector<Tensor>&;

Tensor targets(std::vector<int64_t> v, Shape shape) { return from_vector(v, shape); }

// Per-position cross-entropy of logits (N, C, inner) (row-major values) against
// smoothed targets, by loops; ignored positions give 0. Also returns the count.
std::vector<double> ce_ref(const std::vector<double>& x, const std::vector<int64_t>& t, int64_t N, int64_t C,
                           int64_t inner, int64_t ignore, double eps, int64_t* count) {
  std::vector<double> loss;
  *count = 0;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t tp = t[size_t(n * inner + i)];
      if (tp == ignore) {
        loss.push_back(0);
        continue;
      }
      ++*count;
      auto at = [&](int64_t c) { return x[size_t((n * C + c) * inner + i)]; };
      long double m = -INFINITY, s = 0, l = 0;
      for (int64_t c = 0; c < C; ++c) m = std::max<long double>(m, at(c));
      for (int64_t c = 0; c < C; ++c) s += std::exp(at(c) - m);
      const long double lse = m + std::log(s);
      for (int64_t c = 0; c < C; ++c) {
        const long double q = (c == tp ? 1 - eps : 0) + eps / C;
        l -= q * (at(c) - lse);
      }
      loss.push_back(double(l));
    }
  return loss;
}

double total(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s;
}

}  // namespace

TEST_CASE("cross_entropy matches a loop reference: reductions, ignore_index, smoothing, 3-D logits") {
  Generator gen(71);
  for (DType dt : {kFloat64, kFloat32}) {
    const double tol = dt == kFloat64 ? 1e-12 : 2e-6;
    // (N, C) = (4, 5), target 2 ignored at position 2 via ignore_index.
    Tensor x = mul(randn({4, 5}, {.dtype = dt}, &gen), 3.0);
    Tensor t = targets({1, 4, 2, 0}, {4});
    for (double eps : {0.0, 0.2}) {
      for (int64_t ignore : {-100, 2}) {
        CAPTURE(eps);
        CAPTURE(ignore);
        int64_t count = 0;
        auto ref = ce_ref(x.to_vector<double>(), t.to_vector<int64_t>(), 4, 5, 1, ignore, eps, &count);
        CrossEntropyOptions o{.ignore_index = ignore, .label_smoothing = eps};
        check_close(cross_entropy(x, t, {ignore, eps, Reduction::None}), ref, tol, tol);
        check_close(cross_entropy(x, t, {ignore, eps, Reduction::Sum}), {total(ref)}, tol, tol);
        check_close(cross_entropy(x, t, o), {total(ref) / double(count)}, tol, tol);
      }
    }
    // (N, C, d) = (2, 5, 3) with targets (2, 3).
    Tensor x3 = randn({2, 5, 3}, {.dtype = dt}, &gen);
    Tensor t3 = targets({0, 4, -100, 3, 3, 1}, {2, 3});
    int64_t count = 0;
    auto ref3 = ce_ref(x3.to_vector<double>(), t3.to_vector<int64_t>(), 2, 5, 3, -100, 0.1, &count);
    CHECK(cross_entropy(x3, t3, {.reduction = Reduction::None}).sizes() == Shape{2, 3});
    check_close(cross_entropy(x3, t3, {.label_smoothing = 0.1, .reduction = Reduction::None}), ref3, tol, tol);
    check_close(cross_entropy(x3, t3, {.label_smoothing = 0.1}), {total(ref3) / 5.0}, tol, tol);
    // One unbatched sample: logits (C), target ().
    Tensor x1 = randn({5}, {.dtype = dt}, &gen);
    auto ref1 = ce_ref(x1.to_vector<double>(), {3}, 1, 5, 1, -100, 0.0, &count);
    check_close(cross_entropy(x1, targets({3}, {})), ref1, tol, tol);
  }
}

TEST_CASE("cross_entropy gradcheck over layouts with ignore_index, smoothing and 3-D logits") {
  Tensor t = targets({1, 4, 2, 0}, {4});
  Tensor t3 = targets({0, 4, -100, 3, 3, 1}, {2, 3});
  for (Layout l : all_layouts()) {
    CAPTURE(layout_name(l));
    Tensor x = leaf64({4, 5}, 72, l, -2, 2);
    Tensor x3 = leaf64({2, 5, 3}, 73, l, -2, 2);
    for (Reduction r : {Reduction::Mean, Reduction::Sum, Reduction::None}) {
      CAPTURE(int(r));
      CHECK_GRADCHECK([t, r](V a) { return cross_entropy(a[0], t, {.reduction = r}); }, {x});
      CHECK_GRADCHECK([t, r](V a) { return cross_entropy(a[0], t, {2, 0.15, r}); }, {x});
      CHECK_GRADCHECK([t3, r](V a) { return cross_entropy(a[0], t3, {.label_smoothing = 0.3, .reduction = r}); }, {x3});
    }
  }
  // Expanded logits.
  Tensor row = leaf64({1, 5}, 74);
  CHECK_GRADCHECK([t](V a) { return cross_entropy(expand(a[0], {4, 5}), t, {.label_smoothing = 0.1}); }, {row});
}

TEST_CASE("cross_entropy gradient is (softmax - smoothed one-hot) / count, large logits, all ignored") {
  Tensor x = tensor({1, 2, 3, 0, 0, 0, 5, -1, 2}, {3, 3}, {.dtype = kFloat64, .requires_grad = true});
  Tensor t = targets({2, -100, 0}, {3});
  backward(cross_entropy(x, t, {.label_smoothing = 0.3}));
  std::vector<double> sm = softmax(detach(x), 1).to_vector<double>(), want(9, 0.0);
  const std::vector<int64_t> tv{2, -100, 0};
  for (int64_t n = 0; n < 3; ++n)
    for (int64_t c = 0; c < 3; ++c)
      if (tv[size_t(n)] >= 0)
        want[size_t(n * 3 + c)] = (sm[size_t(n * 3 + c)] - ((c == tv[size_t(n)] ? 0.7 : 0) + 0.1)) / 2.0;
  check_close(x.grad(), want, 1e-12);

  for (DType dt : {kFloat32, kFloat64}) {
    // exp(1000) overflows; the max-shifted log-sum-exp does not.
    Tensor big = tensor({1000, 0, 1000, 1000}, {2, 2}, {.dtype = dt});
    check_close(cross_entropy(big, targets({1, 0}, {2}), {.reduction = Reduction::None}), {1000, std::log(2.0)}, 1e-6,
                1e-6);
    // Every target ignored: loss 0 and zero gradient (not NaN).
    Tensor z = tensor({1, 2, 3, 4}, {2, 2}, {.dtype = dt, .requires_grad = true});
    Tensor loss = cross_entropy(z, targets({-100, -100}, {2}));
    CHECK(loss.item() == 0.0);
    backward(loss);
    check_close(z.grad(), {0, 0, 0, 0});
    Tensor nl = nll_loss(z, targets({5, 5}, {2}), 5);
    CHECK(nl.item() == 0.0);
  }
}

TEST_CASE("nll_loss matches -x[target] and equals cross_entropy after log_softmax") {
  Tensor lp = tensor({-1, -2, -3, -0.5, -0.25, -4}, {2, 3}, {.dtype = kFloat64});
  Tensor t = targets({2, 0}, {2});
  check_close(nll_loss(lp, t, -100, Reduction::None), {3, 0.5});
  check_close(nll_loss(lp, t, -100, Reduction::Sum), {3.5});
  check_close(nll_loss(lp, t), {1.75});
  check_close(nll_loss(lp, t, 0), {3});  // position 1 ignored: mean over one
  Generator gen(75);
  Tensor x3 = randn({2, 4, 3}, {.dtype = kFloat64}, &gen);
  Tensor t3 = targets({0, 3, 1, 2, 2, 0}, {2, 3});
  check_close(nll_loss(log_softmax(x3, 1), t3, -100, Reduction::None),
              cross_entropy(x3, t3, {.reduction = Reduction::None}), 1e-12);
  for (Layout l : all_layouts()) {
    CAPTURE(layout_name(l));
    Tensor x = leaf64({2, 4, 3}, 76, l);
    for (Reduction r : {Reduction::Mean, Reduction::Sum, Reduction::None})
      CHECK_GRADCHECK([t3, r](V a) { return nll_loss(a[0], t3, 3, r); }, {x});
  }
  Tensor row = leaf64({1, 4, 1}, 77);
  CHECK_GRADCHECK([t3](V a) { return nll_loss(expand(a[0], {2, 4, 3}), t3); }, {row});
}

TEST_CASE("mse_loss matches a loop reference and gradchecks both inputs") {
  Tensor a = tensor({1, 2, 3, 4, 5, 6}, {2, 3}, {.dtype = kFloat64});
  Tensor b = tensor({1.5, 2, 1, 4, 0, 7}, {2, 3}, {.dtype = kFloat64});
  std::vector<double> ref;
  std::vector<double> av = a.to_vector<double>(), bv = b.to_vector<double>();
  for (size_t i = 0; i < av.size(); ++i) ref.push_back((av[i] - bv[i]) * (av[i] - bv[i]));
  check_close(mse_loss(a, b, Reduction::None), ref);
  check_close(mse_loss(a, b, Reduction::Sum), {total(ref)});
  check_close(mse_loss(a, b), {total(ref) / 6});
  check_close(mse_loss(to(a, kFloat32), to(b, kFloat32)), {total(ref) / 6}, 1e-6);
  CHECK(mse_loss(zeros({0}), zeros({0})).item() == 0.0);
  // A long float32 sum across many chunks keeps its digits.
  CHECK(mse_loss(full({1 << 20}, 0.25), zeros({1 << 20}), Reduction::Sum).item() == doctest::Approx(65536.0));
  for (Layout l : all_layouts()) {
    CAPTURE(layout_name(l));
    Tensor x = leaf64({3, 4}, 78, l), y = leaf64({3, 4}, 79, l);
    for (Reduction r : {Reduction::Mean, Reduction::Sum, Reduction::None}) {
      CHECK_GRADCHECK([r](V v) { return mse_loss(v[0], v[1], r); }, {x, y});
      CHECK_GRADCHECK([y, r](V v) { return mse_loss(v[0], detach(y), r); }, {x});
    }
  }
  Tensor row = leaf64({1, 4}, 79), y = leaf64({3, 4}, 80);
  CHECK_GRADCHECK([](V v) { return mse_loss(expand(v[0], {3, 4}), v[1]); }, {row, y});
}

TEST_CASE("loss errors name the op, the bad target, dtypes and shapes") {
  Tensor x = zeros({2, 5});
  CHECK_THROWS_WITH_AS(cross_entropy(x, targets({1, 7}, {2})),
                       "cross_entropy: target 7 at position 1 is out of range for 5 classes (ignore_index is -100)",
                       Error);
  CHECK_THROWS_WITH_AS(nll_loss(x, targets({-1, 0}, {2})),
                       doctest::Contains("nll_loss: target -1 at position 0 is out of range for 5 classes"), Error);
  CHECK_THROWS_WITH_AS(cross_entropy(x, zeros({2})),
                       "cross_entropy: targets must be int64 class indices, got float32 [2]", Error);
  CHECK_THROWS_WITH_AS(cross_entropy(x, targets({1, 2, 3}, {3})),
                       "cross_entropy: targets [3] do not match input float32 [2, 5] (expected targets [2]; the "
                       "class dim is dim 1)",
                       Error);
  CHECK_THROWS_WITH_AS(cross_entropy(zeros({2, 5, 4}), targets({0, 1}, {2})),
                       doctest::Contains("(expected targets [2, 4]; the class dim is dim 1)"), Error);
  CHECK_THROWS_WITH_AS(cross_entropy(x, targets({1, 2}, {2}), {.label_smoothing = 1.0}),
                       "cross_entropy: label_smoothing must be in [0, 1), got 1", Error);
  CHECK_THROWS_WITH_AS(cross_entropy(zeros({2, 5}, {.dtype = kInt64}), targets({1, 2}, {2})),
                       "cross_entropy: expected floating logits, got int64 [2, 5]", Error);
  CHECK_THROWS_WITH_AS(mse_loss(zeros({2, 3}), zeros({3, 2})),
                       "mse_loss: shape mismatch, input float32 [2, 3] vs target float32 [3, 2]", Error);
  CHECK_THROWS_WITH_AS(mse_loss(zeros({2}), zeros({2}, {.dtype = kFloat64})),
                       "mse_loss: dtype mismatch, input float32 [2] vs target float64 [2]", Error);
}
