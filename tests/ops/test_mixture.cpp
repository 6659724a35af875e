// tests/ops/test_mixture.cpp — mixture_softmax: forward (weights and
// responsibilities) against a loop reference in long double, soft and hard,
// with causal/padding masks broadcast from small shapes; gradchecks over
// layouts, broadcast bias and expanded scores; gradgradchecks; fully masked rows, large
// scores, a -inf component; thread-count independence; error texts.
#include <cmath>
#include <limits>

#include "ops/mixture.h"
#include "ops/ops_testing.h"
#include "support/testing.h"

using namespace ks;
using namespace ks::testing;

namespace {

using V = const std::vector<Tensor>&;
using MaskAt = std::function<bool(int64_t n, int64_t i, int64_t j)>;
const double kInf = std::numeric_limits<double>::infinity();

struct Ref {
  std::vector<double> a, gamma;
};

// Straight from the header's formulas: s (N, T, M, S), bias (N, M, S) row-major.
Ref mixture_ref(const std::vector<double>& s, const std::vector<double>& bias, int64_t N, int64_t T, int64_t M,
                int64_t S, double scale, bool hard, const MaskAt& masked) {
  Ref out{std::vector<double>(size_t(N * T * S), 0.0), std::vector<double>(size_t(N * T * M * S), 0.0)};
  for (int64_t n = 0; n < N; ++n)
    for (int64_t i = 0; i < T; ++i) {
      std::vector<long double> ell(size_t(S), -INFINITY);
      auto x = [&](int64_t r, int64_t j) {
        return (long double)scale * s[size_t(((n * T + i) * M + r) * S + j)] + bias[size_t((n * M + r) * S + j)];
      };
      for (int64_t j = 0; j < S; ++j) {
        if (masked(n, i, j)) continue;
        long double l = -INFINITY;
        if (hard) {
          int64_t best = 0;
          for (int64_t r = 0; r < M; ++r)
            if (x(r, j) > x(best, j)) best = r;
          l = x(best, j);
          out.gamma[size_t(((n * T + i) * M + best) * S + j)] = 1;
        } else {
          long double sum = 0;
          for (int64_t r = 0; r < M; ++r) sum += std::exp(x(r, j));
          l = std::log(sum);
          for (int64_t r = 0; r < M; ++r)
            out.gamma[size_t(((n * T + i) * M + r) * S + j)] = double(std::exp(x(r, j) - l));
        }
        ell[size_t(j)] = l;
      }
      long double m = -INFINITY, z = 0;
      for (long double l : ell) m = std::max(m, l);
      if (m == -INFINITY) continue;
      for (long double l : ell) z += std::exp(l - m);
      for (int64_t j = 0; j < S; ++j) out.a[size_t((n * T + i) * S + j)] = double(std::exp(ell[size_t(j)] - m) / z);
    }
  return out;
}

Tensor bools(const std::vector<int>& v, const Shape& shape) {
  Tensor t = empty(shape, {.dtype = kBool});
  for (size_t i = 0; i < v.size(); ++i) t.data<bool>()[i] = v[i] != 0;
  return t;
}

Tensor causal(int64_t T, int64_t S) {
  Tensor t = empty({T, S}, {.dtype = kBool});
  for (int64_t i = 0; i < T; ++i)
    for (int64_t j = 0; j < S; ++j) t.data<bool>()[i * S + j] = j > i + (S - T);
  return t;
}

}  // namespace

TEST_CASE("mixture_softmax matches a loop reference: soft and hard, masks, M = 1..3, float32 and float64") {
  const int64_t B = 2, H = 3, T = 4, S = 5;
  Tensor pad = bools({0, 1, 0, 0, 0, 0, 0, 0, 1, 1}, {B, 1, 1, S});
  auto pad_at = [&](int64_t n, int64_t j) { return pad.data<bool>()[(n / H) * S + j]; };
  const std::vector<std::pair<Tensor, MaskAt>> masks = {
      {Tensor(), [](int64_t, int64_t, int64_t) { return false; }},
      {causal(T, S), [](int64_t, int64_t i, int64_t j) { return j > i + 1; }},
      {pad, [&](int64_t n, int64_t, int64_t j) { return pad_at(n, j); }},
      {logical_or(causal(T, S), pad), [&](int64_t n, int64_t i, int64_t j) { return j > i + 1 || pad_at(n, j); }},
  };
  for (DType dt : {kFloat64, kFloat32})
    for (int64_t M : {1, 2, 3})
      for (bool hard : {false, true})
        for (size_t k = 0; k < masks.size(); ++k) {
          CAPTURE(name(dt));
          CAPTURE(M);
          CAPTURE(hard);
          CAPTURE(k);
          Generator gen(uint64_t(M * 10 + k));
          Tensor s = mul(randn({B, H, T, M, S}, {.dtype = dt}, &gen), 3.0);
          Tensor bias = randn({B, H, M, S}, {.dtype = dt}, &gen);
          const double scale = 0.7;
          MixtureSoftmax out =
              mixture_softmax(s, bias, scale, masks[k].first, {.hard = hard, .responsibilities = true});
          CHECK(out.weights.sizes() == Shape{B, H, T, S});
          CHECK(out.responsibilities.sizes() == Shape{B, H, T, M, S});
          Ref ref = mixture_ref(s.to_vector<double>(), bias.to_vector<double>(), B * H, T, M, S, scale, hard,
                                masks[k].second);
          const double tol = dt == kFloat64 ? 1e-12 : 2e-6;
          check_close(out.weights, ref.a, tol, tol);
          check_close(out.responsibilities, ref.gamma, tol, tol);
        }
  // Strided scores (a permuted view) and a bias broadcast from (M, S).
  Generator gen(5);
  Tensor base = randn({5, 2, 4, 3}, {.dtype = kFloat64}, &gen);  // (S, M, T, N)
  Tensor s = permute(base, {3, 2, 1, 0});                        // (N=3, T=4, M=2, S=5)
  Tensor bias = randn({2, 5}, {.dtype = kFloat64}, &gen);
  std::vector<double> bfull;
  for (int n = 0; n < 3; ++n)
    for (double v : bias.to_vector<double>()) bfull.push_back(v);
  Ref ref = mixture_ref(s.to_vector<double>(), bfull, 3, 4, 2, 5, 1.3, false,
                        [](int64_t, int64_t i, int64_t j) { return j > i + 1; });
  MixtureSoftmax out = mixture_softmax(s, bias, 1.3, causal(4, 5), {.responsibilities = true});
  check_close(out.weights, ref.a, 1e-12, 1e-12);
  check_close(out.responsibilities, ref.gamma, 1e-12, 1e-12);
}

TEST_CASE("mixture_softmax rows sum to 1, responsibilities sum to 1 over components on visible keys") {
  Generator gen(9);
  Tensor s = randn({2, 6, 3, 7}, {}, &gen), bias = randn({2, 3, 7}, {}, &gen);
  MixtureSoftmax out = mixture_softmax(s, bias, 0.5, causal(6, 7), {.responsibilities = true});
  check_close(sum(out.weights, {-1}), std::vector<double>(12, 1.0), 1e-6, 0);
  std::vector<double> g = sum(out.responsibilities, {-2}).to_vector<double>();  // (2, 6, 7)
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t i = 0; i < 6; ++i)
      for (int64_t j = 0; j < 7; ++j) {
        CAPTURE(i);
        CAPTURE(j);
        CHECK(g[size_t((n * 6 + i) * 7 + j)] == doctest::Approx(j > i + 1 ? 0.0 : 1.0).epsilon(1e-6));
      }
}

TEST_CASE("mixture_softmax gradcheck over layouts, broadcast bias and expanded scores") {
  Tensor pad = bools({0, 0, 1, 0, 0, 0, 0, 0}, {2, 1, 4});
  for (bool hard : {false, true})
    for (Layout l : all_layouts()) {
      CAPTURE(hard);
      CAPTURE(layout_name(l));
      Tensor s = leaf64({2, 3, 2, 4}, 31, l, -2, 2);
      Tensor bias = leaf64({2, 2, 4}, 32, l);
      CHECK_GRADCHECK([&](V a) { return mixture_softmax(a[0], a[1], 0.8, causal(3, 4), {.hard = hard}).weights; },
                      {s, bias});
      CHECK_GRADCHECK([&](V a) { return mixture_softmax(a[0], a[1], 1.5, pad, {.hard = hard}).weights; }, {s, bias});
    }
  // bias broadcast over the batch dims; a weighted sum so the gradient arriving is not uniform.
  Tensor s = leaf64({2, 2, 3, 2, 4}, 33, -2, 2);
  Tensor b = leaf64({2, 4}, 34), b4 = leaf64({1, 2, 2, 4}, 35), w = leaf64({2, 2, 3, 4}, 36);
  CHECK_GRADCHECK([&](V a) { return mul(mixture_softmax(a[0], a[1], 0.6).weights, a[2]); }, {s, b, w});
  CHECK_GRADCHECK([&](V a) { return mixture_softmax(a[0], a[1], 0.6, causal(3, 4)).weights; }, {s, b4});
  // Scores expanded inside f (stride 0 across a batch dim); M = 3.
  Tensor e = leaf64({1, 3, 3, 4}, 37, -2, 2), eb = leaf64({2, 3, 4}, 38);
  CHECK_GRADCHECK([&](V a) { return mixture_softmax(expand(a[0], {2, 3, 3, 4}), a[1], 1.0).weights; }, {e, eb});
  // Only one input needing a gradient.
  Tensor c = detach(b);
  CHECK_GRADCHECK([&](V a) { return mixture_softmax(a[0], c, 0.6).weights; }, {s});
}

TEST_CASE(
    "mixture_softmax: fully masked rows give zeros and zero gradients, large scores stay finite, a -inf component "
    "drops out") {
  for (DType dt : {kFloat32, kFloat64})
    for (bool hard : {false, true}) {
      CAPTURE(hard);
      Tensor s = ones({1, 2, 2, 3}, {.dtype = dt, .requires_grad = true});
      Tensor bias = zeros({1, 2, 3}, {.dtype = dt, .requires_grad = true});
      Tensor mask = bools({1, 1, 1, 0, 1, 0}, {2, 3});  // row 0 fully masked
      MixtureSoftmax out = mixture_softmax(s, bias, 1.0, mask, {.hard = hard, .responsibilities = true});
      check_close(out.weights, {0, 0, 0, 0.5, 0, 0.5});
      // Equal components: soft splits 1/2 each, hard picks the first.
      if (hard)
        check_close(out.responsibilities, {0, 0, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0});
      else
        check_close(out.responsibilities, {0, 0, 0, 0, 0, 0, .5, 0, .5, .5, 0, .5});
      backward(sum(mul(out.weights, tensor({1, 2, 3, 4, 5, 6}, {2, 3}, {.dtype = dt}))));
      std::vector<double> gs = s.grad().to_vector<double>(), gb = bias.grad().to_vector<double>();
      for (int k = 0; k < 6; ++k) CHECK(gs[size_t(k)] == 0.0);  // row 0 of both components
      for (double v : gb) CHECK_FALSE(std::isnan(v));
      // Large scores do not overflow: 1000 vs 1001 in one component.
      Tensor big = tensor({1000, 1001, 0, 0}, {1, 1, 2, 2}, {.dtype = dt});
      MixtureSoftmax o2 = mixture_softmax(big, zeros({1, 2, 2}, {.dtype = dt}), 1.0, Tensor(),
                                          {.hard = hard, .responsibilities = true});
      const double e = std::exp(-1.0);
      // soft: ℓ = (log(e^1000 + 1), log(e^1001 + 1)) ≈ (1000, 1001); hard: the same maxima.
      check_close(o2.weights, {e / (1 + e), 1 / (1 + e)}, 1e-6, 1e-5);
      // A component with bias -inf (π_r = 0) never gets responsibility; the others carry on.
      Tensor nb = tensor({-kInf, -kInf, 0, 0}, {1, 2, 2}, {.dtype = dt});
      MixtureSoftmax o3 = mixture_softmax(tensor({1, 2, 3, 4}, {1, 1, 2, 2}, {.dtype = dt}), nb, 1.0, Tensor(),
                                          {.hard = hard, .responsibilities = true});
      check_close(o3.responsibilities, {0, 0, 1, 1});
      check_close(o3.weights, {e / (1 + e), 1 / (1 + e)}, 1e-6, 1e-5);
    }
}

TEST_CASE("mixture_softmax gradgradchecks: soft and hard, causal and padding masks, broadcast bias") {
  const Tensor pad = bools({0, 1, 0, 0, 1, 1, 1, 1}, {2, 1, 4});  // batch 1 sees nothing
  for (bool hard : {false, true}) {
    CAPTURE(hard);
    Tensor s = leaf64({2, 3, 2, 4}, 71, -2, 2), bias = leaf64({2, 4}, 72);
    CHECK_GRADGRADCHECK([&](V a) { return mixture_softmax(a[0], a[1], 0.8, causal(3, 4), {.hard = hard}).weights; },
                        {s, bias});
    CHECK_GRADGRADCHECK([&](V a) { return mixture_softmax(a[0], a[1], 1.5, pad, {.hard = hard}).weights; }, {s, bias});
  }
}

TEST_CASE("mixture_softmax gives the same bits for any thread count") {
  Generator gen(41);
  Tensor s = randn({2, 70, 2, 130}, {}, &gen), bias = randn({2, 2, 130}, {}, &gen), g = randn({2, 70, 130}, {}, &gen);
  s.set_requires_grad(true);
  bias.set_requires_grad(true);
  auto run = [&] {
    s.set_grad(Tensor());
    bias.set_grad(Tensor());
    Tensor a = mixture_softmax(s, bias, 0.3, causal(70, 130)).weights;
    backward(a, g);
    return std::vector<std::vector<float>>{a.to_vector<float>(), s.grad().to_vector<float>(),
                                           bias.grad().to_vector<float>()};
  };
  auto [one, many] = on_one_and_many_threads(run);
  CHECK(one == many);
}

TEST_CASE("mixture_softmax errors name the op, the shapes and dtypes") {
  Tensor s = zeros({2, 3, 2, 4}), b = zeros({2, 2, 4});
  CHECK_THROWS_WITH_AS(mixture_softmax(zeros({3, 4}), b, 1.0),
                       "mixture_softmax: scores must be (..., T, M, S), got float32 [3, 4]", Error);
  CHECK_THROWS_WITH_AS(
      mixture_softmax(zeros({2, 3, 2, 4}, {.dtype = kInt64}), b, 1.0),
      "mixture_softmax: expected floating scores (float32, float64, bfloat16, float16), got int64 [2, 3, 2, 4]", Error);
  CHECK_THROWS_WITH_AS(mixture_softmax(s, zeros({2, 2, 4}, {.dtype = kFloat64}), 1.0),
                       "mixture_softmax: bias float64 [2, 2, 4] must have the dtype and device of scores float32 "
                       "[2, 3, 2, 4]",
                       Error);
  CHECK_THROWS_WITH_AS(mixture_softmax(s, zeros({2, 3, 4}), 1.0),
                       "mixture_softmax: bias float32 [2, 3, 4] does not broadcast to (..., M, S) = [2, 2, 4]", Error);
  CHECK_THROWS_WITH_AS(mixture_softmax(s, b, 1.0, zeros({3, 4})),
                       "mixture_softmax: mask must be bool on cpu, got float32 [3, 4]", Error);
  CHECK_THROWS_WITH_AS(mixture_softmax(s, b, 1.0, zeros({2, 4}, {.dtype = kBool})),
                       "mixture_softmax: mask bool [2, 4] does not broadcast to (..., T, S) = [2, 3, 4]", Error);
  CHECK_THROWS_WITH_AS(mixture_softmax(s, b, INFINITY), "mixture_softmax: scale must be finite, got inf", Error);
}
