// tests/ops/test_unary.cpp — the unary ops: the float32 fast math against
// libm in double, forward against loops in both float dtypes, gradchecks and
// gradgradchecks over layouts and an expanded input, a third derivative's
// error, gradients at kinks, integer forms, errors, the GELU backward's
// vectorised loop against its strided one, and the float32 formulas compiled
// here against the kernels, bit for bit (GELU, SiLU, tanh GELU, sigmoid, tanh).
#include <algorithm>
#include <bit>

#include "elementwise_ref.h"
#include "ops/ops_testing.h"
#include "ops/vec_math.h"
#include "unary_rows.h"

using namespace ks;
using namespace ks::testing;

namespace {

using V = const std::vector<Tensor>&;

// max over a float32 sweep of |fast - libm| / (|libm| + tiny).
double worst_rel_error(float (*fast)(float), double (*exact)(double), float lo, float hi, int n, double tiny) {
  double worst = 0;
  for (int i = 0; i <= n; ++i) {
    float x = lo + (hi - lo) * float(i) / float(n);
    double e = exact(double(x));
    if (!std::isfinite(e)) continue;
    worst = std::max(worst, std::fabs(double(fast(x)) - e) / (std::fabs(e) + tiny));
  }
  return worst;
}

// How many of a's values differ from b's in their bits (NaNs included).
int64_t differing_bits(const std::vector<float>& a, const std::vector<float>& b) {
  int64_t differ = 0;
  for (size_t i = 0; i < a.size(); ++i) differ += std::bit_cast<uint32_t>(a[i]) != std::bit_cast<uint32_t>(b[i]);
  return differ;
}

}  // namespace

TEST_CASE("float32 fast math matches libm to a few ulp, special values included") {
  using namespace ks::cpu;
  auto fexp = [](float x) { return vmath::exp(x); };
  auto flog = [](float x) { return vmath::log(x); };
  auto ftanh = [](float x) { return vmath::tanh(x); };
  auto ferf = [](float x) { return vmath::erf(x); };
  auto dexp = [](double x) { return std::exp(x); };
  auto dlog = [](double x) { return std::log(x); };
  auto dtanh = [](double x) { return std::tanh(x); };
  auto derf = [](double x) { return std::erf(x); };
  ks::DenormalModeGuard keep_denormals(false);  // the denormal range is under test
  // exp is relative-accurate until results turn denormal (x < -87.3).
  CHECK(worst_rel_error(fexp, dexp, -87.f, 88.7f, 400000, 0) < 3e-7);
  CHECK(worst_rel_error(ftanh, dtanh, -12.f, 12.f, 400000, 1e-30) < 1e-6);
  CHECK(worst_rel_error(ferf, derf, -6.f, 6.f, 400000, 1e-30) < 1e-6);
  CHECK(worst_rel_error(ftanh, dtanh, -1e-3f, 1e-3f, 10000, 1e-30) < 1e-6);  // near 0, relative
  CHECK(worst_rel_error(ferf, derf, -1e-3f, 1e-3f, 10000, 1e-30) < 1e-6);
  // log over every 9973rd float32 bit pattern: denormals, normals, up to FLT_MAX.
  double worst_log = 0;
  for (uint32_t b = 1; b < 0x7f800000u; b += 9973) {
    float x = std::bit_cast<float>(b);
    double e = std::log(double(x));
    worst_log = std::max(worst_log, std::fabs(double(flog(x)) - e) / std::max(std::fabs(e), 1e-3));
  }
  CHECK(worst_log < 3e-7);
  CHECK(worst_rel_error(flog, dlog, 0.5f, 2.0f, 200000, 0) < 3e-7 * 20);  // log ~ 0 near 1: looser relative
  // Special values behave like libm.
  CHECK(fexp(-INFINITY) == 0.f);
  CHECK(fexp(INFINITY) == INFINITY);
  CHECK(fexp(89.f) == INFINITY);
  CHECK(fexp(-104.f) == 0.f);
  CHECK(fexp(-100.f) == doctest::Approx(std::exp(-100.0)).epsilon(1e-2));  // denormal range
  CHECK(std::isnan(fexp(NAN)));
  CHECK(fexp(0.f) == 1.f);
  CHECK(flog(0.f) == -INFINITY);
  CHECK(std::isnan(flog(-1.f)));
  CHECK(flog(INFINITY) == INFINITY);
  CHECK(std::isnan(flog(NAN)));
  CHECK(flog(1.f) == 0.f);
  CHECK(flog(1e-45f) == doctest::Approx(std::log(double(1e-45f))).epsilon(1e-6));  // smallest denormal
  // Beyond the clamp exactly ±1, whether or not the compiler folds the
  // clamped branch (the polynomial there is 1 - 2.4e-7).
  CHECK(ftanh(INFINITY) == 1.f);
  CHECK(ftanh(-INFINITY) == -1.f);
  volatile float beyond = 8.f;  // not a constant the compiler could fold
  CHECK(ftanh(beyond) == 1.f);
  CHECK(ftanh(-beyond) == -1.f);
  CHECK(std::isnan(ftanh(NAN)));
  CHECK(ferf(INFINITY) == doctest::Approx(1.0).epsilon(1e-7));
  CHECK(std::isnan(ferf(NAN)));
}

TEST_CASE("unary ops match a loop reference in float64 and float32") {
  for (const UnaryCase& c : unary_cases()) {
    const std::string op_name = c.node;
    CAPTURE(op_name);
    Tensor x64 = leaf64({5, 7}, 51, c.lo, c.hi);
    Tensor y64 = c.op(x64);
    CHECK(y64.sizes() == Shape{5, 7});
    CHECK(y64.dtype() == kFloat64);
    check_close(y64, ref_unary(x64, c.ref), 1e-12, 1e-12);
    // float32 runs the vectorised path on a row long enough to be split
    // across threads, and the strided path on a transposed view.
    Tensor x32 = to(leaf64({2, 16500}, 52, c.lo, c.hi), kFloat32);  // > kElementwiseGrain
    check_close(c.op(x32), ref_unary(x32, c.ref), 2e-6, 2e-6);
    Tensor t32 = transpose(to(leaf64({3, 101}, 53, c.lo, c.hi), kFloat32), 0, 1);
    check_close(c.op(t32), ref_unary(t32, c.ref), 2e-6, 2e-6);
  }
  // NaN passes through relu and clamp; relu(-0) and friends.
  check_close(relu(tensor({NAN, -1, 0, 2})), {NAN, 0, 0, 2});
  check_close(clamp(tensor({NAN, -5, 5}), -1, 1), {NAN, -1, 1});
  check_close(sigmoid(tensor({-INFINITY, INFINITY, -100, 100})), {0, 1, std::exp(-100.0), 1}, 1e-30);
  // The tanh approximation of gelu is selectable and differs from the exact form.
  Tensor x = tensor({1.5}, {}, {.dtype = kFloat64});
  CHECK(gelu(x).item() == doctest::Approx(gelu_ref(1.5)).epsilon(1e-14));
  CHECK(gelu(x, GeluApprox::Tanh).item() == doctest::Approx(gelu_tanh_ref(1.5)).epsilon(1e-14));
  CHECK(gelu(x).item() != gelu(x, GeluApprox::Tanh).item());
}

TEST_CASE("the float32 gelu backward: the vectorised loop gives the strided loop's bits") {
  // The contiguous loop inlines Gelu::df and vectorises it (its AVX-512 twin
  // where the CPU has it; the inlining budget of ops/cpu/unary.cpp in
  // CMakeLists.txt), the strided one runs it an element at a time: the same
  // operations in the same order, so the same bits.
  const Tensor values = detach(to(leaf64({2, 16500}, 61, -9, 9), kFloat32));  // > kElementwiseGrain
  const Tensor g = detach(to(leaf64({2, 16500}, 62, -3, 3), kFloat32));
  Tensor flat = contiguous(values), by_column = contiguous(transpose(values, 0, 1));  // (2, n) and (n, 2)
  flat.set_requires_grad(true);
  by_column.set_requires_grad(true);
  backward(gelu(flat), g);
  backward(gelu(transpose(by_column, 0, 1)), g);  // a strided (2, n) view of the same values
  const Tensor a = flat.grad(), b = contiguous(transpose(by_column.grad(), 0, 1));
  CHECK(differing_bits(a.to_vector<float>(), b.to_vector<float>()) == 0);
}

// The formulas' multiply-adds are spelled as fused ones (ops/kernel_math.h,
// ops/vec_math.h), so this file, compiled by whichever compiler and at
// whichever optimisation builds it (GCC -O2 in Release, clang -O0 in the
// sanitizer pass), computes the kernels' bits. Left to -ffp-contract, GELU's
// derivative differed from the kernel's in 24% of these values at GCC -O0
// and 5% under clang -O2.
[[gnu::noinline]] static void gelu_df_here(float* out, const float* g, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = unary_ops::Gelu::df<float>(g[i], x[i]);
}

TEST_CASE("float32 exp, log, tanh, GELU and its derivative compiled here give the kernels' bits") {
  const int64_t n = 33000;
  std::vector<float> xs(static_cast<size_t>(n)), gs(static_cast<size_t>(n)), here(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    xs[size_t(i)] = -9.f + 18.f * float(i) / float(n);  // GELU's cancellation near -4, tanh's clamp at 7.9
    gs[size_t(i)] = 1.f + 0.5f * float(i % 7);
  }
  const Tensor x = from_vector(xs);
  const auto same_bits = [&](const Tensor& kernel, float (*fn)(float)) {
    std::vector<float> mine(xs.size());
    std::transform(xs.begin(), xs.end(), mine.begin(), fn);
    return differing_bits(kernel.to_vector<float>(), mine);
  };
  CHECK(same_bits(exp(x), [](float v) { return cpu::vmath::exp(v); }) == 0);
  CHECK(same_bits(log(abs(x)), [](float v) { return cpu::vmath::log(std::fabs(v)); }) == 0);
  CHECK(same_bits(tanh(x), [](float v) { return cpu::vmath::tanh(v); }) == 0);
  CHECK(same_bits(gelu(x), [](float v) { return unary_ops::Gelu::f<float>(v); }) == 0);
  Tensor xg = detach(x).set_requires_grad(true);
  backward(gelu(xg), from_vector(gs));
  gelu_df_here(here.data(), gs.data(), xs.data(), n);
  CHECK(differing_bits(xg.grad().to_vector<float>(), here) == 0);
}

// The same for the other formulas with a product added or subtracted: SiLU,
// tanh-approximated GELU, sigmoid and tanh, forward, derivative and second
// derivative (ddf, which the double backward's kernel runs). Unspelled, GCC
// at -O2 fused these where this file, at -O1 or under clang, may not.
template <class Op> struct Here {
  [[gnu::noinline]] static void f(float* out, const float* x, int64_t n) {
    for (int64_t i = 0; i < n; ++i) out[i] = Op::template f<float>(x[i]);
  }
  // Op::saves says whether df and ddf take the input or the output.
  [[gnu::noinline]] static void df(float* out, const float* g, const float* at, int64_t n) {
    for (int64_t i = 0; i < n; ++i) out[i] = Op::template df<float>(g[i], at[i]);
  }
  [[gnu::noinline]] static void ddf(float* out, const float* g, const float* at, int64_t n) {
    for (int64_t i = 0; i < n; ++i) out[i] = Op::template ddf<float>(g[i], at[i]);
  }
};

template <class Op>
void check_formulas_here(Tensor (*op)(const Tensor&), const std::vector<float>& xs, const std::vector<float>& gs) {
  const int64_t n = int64_t(xs.size());
  std::vector<float> y(xs.size()), dy(xs.size()), ddy(xs.size());
  Here<Op>::f(y.data(), xs.data(), n);
  const std::vector<float>& at = Op::saves == Saves::Output ? y : xs;
  Here<Op>::df(dy.data(), gs.data(), at.data(), n);
  Here<Op>::ddf(ddy.data(), gs.data(), at.data(), n);

  Tensor x = from_vector(xs).set_requires_grad(true);
  const Tensor g = from_vector(gs), out = op(x);
  CHECK(differing_bits(out.to_vector<float>(), y) == 0);
  const Tensor dx = grad({out}, {x}, {g}, GradOptions{.create_graph = true})[0];
  CHECK(differing_bits(dx.to_vector<float>(), dy) == 0);
  // The df node's backward, reached with ones: ddf at (g, at), taken with
  // respect to what df saved (x, or y for tanh and sigmoid).
  const Tensor wrt = Op::saves == Saves::Output ? out : x;
  const Tensor ddx = grad({sum(dx)}, {wrt})[0];
  CHECK(differing_bits(ddx.to_vector<float>(), ddy) == 0);
}

TEST_CASE("float32 SiLU, tanh GELU, sigmoid and tanh compiled here give the kernels' bits") {
  const int64_t n = 33000;
  std::vector<float> xs(static_cast<size_t>(n)), gs(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    xs[size_t(i)] = -12.f + 24.f * float(i) / float(n);
    gs[size_t(i)] = 0.3f + 0.37f * float(i % 11);
  }
  SUBCASE("silu") {
    check_formulas_here<unary_ops::Silu>([](const Tensor& t) { return silu(t); }, xs, gs);
  }
  SUBCASE("gelu tanh") {
    check_formulas_here<unary_ops::GeluTanh>([](const Tensor& t) { return gelu(t, GeluApprox::Tanh); }, xs, gs);
  }
  SUBCASE("sigmoid") {
    check_formulas_here<unary_ops::Sigmoid>([](const Tensor& t) { return sigmoid(t); }, xs, gs);
  }
  SUBCASE("tanh") {
    check_formulas_here<unary_ops::Tanh>([](const Tensor& t) { return tanh(t); }, xs, gs);
  }
}

TEST_CASE("every unary op gradchecks and gradgradchecks over layouts and an expanded input") {
  for (const UnaryCase& c : unary_cases()) {
    const std::string op_name = c.node;
    CAPTURE(op_name);
    auto f = c.op;
    check_grads_over_layouts([f](V a) { return f(a[0]); }, {{3, 4}}, 53, c.lo, c.hi);
    check_grads_expanded(f, {1, 4}, {3, 4}, 54, c.lo, c.hi);
    Tensor row = leaf64({1, 4}, 54, c.lo, c.hi);
    // Composed with a broadcasting op.
    Tensor y = leaf64({3, 1}, 55, -0.1, 0.1);
    CHECK_GRADCHECK([f](V a) { return mul(f(a[0]), a[1]); }, {row, y});
    // The gradient reaching the op depends on the inputs too (so the second
    // derivative's dependence on the incoming gradient is checked), one broadcast.
    Tensor w = leaf64({3, 1}, 59, 0.5, 1.5);
    CHECK_GRADGRADCHECK([f](V a) { return mul(f(expand(a[0], {3, 4})), mul(a[0], a[1])); }, {row, w});
  }
}

TEST_CASE("a unary op's second derivative is exact, and its third names the op") {
  Tensor x = tensor({-1.0, 0.5, 2.0}, {3}, {.dtype = kFloat64, .requires_grad = true});
  Tensor g1 = grad({sum(exp(x))}, {x}, {}, {.create_graph = true})[0];
  CHECK(std::string(g1.grad_fn()->name()) == "ExpBackwardBackward");
  Tensor g2 = grad({sum(g1)}, {x}, {}, {.create_graph = true})[0];
  check_close(g2, ref_unary(x, [](double v) { return std::exp(v); }), 1e-15);
  CHECK_THROWS_WITH_AS(grad({sum(g2)}, {x}),
                       doctest::Contains("ExpBackwardBackward does not support higher-order gradients"), Error);
  // Saves::Input: log'' = -1/x².
  Tensor p = tensor({0.5, 2.0}, {2}, {.dtype = kFloat64, .requires_grad = true});
  Tensor l1 = grad({sum(log(p))}, {p}, {}, {.create_graph = true})[0];
  check_close(grad({sum(l1)}, {p})[0], {-4.0, -0.25}, 1e-15);
  // Without create_graph the gradient is a plain kernel result, as before.
  CHECK_FALSE(grad({sum(exp(x))}, {x})[0].requires_grad());
}

TEST_CASE("unary gradients at kinks and bounds") {
  Tensor x = tensor({-1, 0, 0.5, 1, 2}, {5}, {.dtype = kFloat64, .requires_grad = true});
  backward(sum(relu(x)));
  check_close(x.grad(), {0, 0, 1, 1, 1});
  x.set_grad(Tensor());
  backward(sum(abs(x)));
  check_close(x.grad(), {-1, 0, 1, 1, 1});
  x.set_grad(Tensor());
  // Gradient passes on the bounds themselves, not outside.
  backward(sum(clamp(x, 0.0, 1.0)));
  check_close(x.grad(), {0, 1, 1, 1, 0});
  x.set_grad(Tensor());
  backward(sum(pow(x, 0.0)));
  check_close(x.grad(), {0, 0, 0, 0, 0});
  x.set_grad(Tensor());
  backward(sum(elu(x, 2.0)));
  check_close(x.grad(), {2 * std::exp(-1.0), 2, 1, 1, 1});
}

TEST_CASE("neg, abs, relu, clamp on integers") {
  for (DType dt : {kInt64, kInt32}) {
    CAPTURE(name(dt));
    Tensor i = small_ints({4, 5}, 56, dt, -9, 10);
    CHECK(neg(i).dtype() == dt);
    check_close(neg(i), ref_unary(i, [](double v) { return -v; }), 0);
    check_close(abs(i), ref_unary(i, [](double v) { return std::fabs(v); }), 0);
    check_close(relu(i), ref_unary(i, [](double v) { return std::max(v, 0.0); }), 0);
    check_close(clamp(i, -2, 3), ref_unary(i, [](double v) { return std::min(std::max(v, -2.0), 3.0); }), 0);
    check_close(clamp(i, {}, 3), ref_unary(i, [](double v) { return std::min(v, 3.0); }), 0);
    check_close(clamp(i, -2, {}), ref_unary(i, [](double v) { return std::max(v, -2.0); }), 0);
  }
}

TEST_CASE("empty and 0-dim tensors") {
  for (const UnaryCase& c : unary_cases()) {
    const std::string op_name = c.node;
    CAPTURE(op_name);
    CHECK(c.op(zeros({0, 3})).sizes() == Shape{0, 3});
    Tensor s = full({}, 0.5, {.dtype = kFloat64});
    check_close(c.op(s), {c.ref(0.5)}, 1e-12);
  }
  CHECK(add(zeros({0, 3}), ones({3})).sizes() == Shape{0, 3});
  CHECK(maximum(zeros({2, 0}), ones({1})).sizes() == Shape{2, 0});
  CHECK(where(to(zeros({0}), kBool), ones({1}), ones({1})).sizes() == Shape{0});
}

TEST_CASE("unary errors name the op") {
  Tensor i = zeros({3}, {.dtype = kInt64});
  CHECK_THROWS_WITH_AS(exp(i), "exp: expected a floating tensor (float32, float64, bfloat16, float16), got int64 [3]",
                       Error);
  CHECK_THROWS_WITH_AS(gelu(i, GeluApprox::Tanh),
                       "gelu: expected a floating tensor (float32, float64, bfloat16, float16), got int64 [3]", Error);
  CHECK_THROWS_WITH_AS(pow(i, 2.0),
                       "pow: expected a floating tensor (float32, float64, bfloat16, float16), got int64 [3]", Error);
  CHECK_THROWS_WITH_AS(
      abs(zeros({2}, {.dtype = kBool})),
      "abs: expected a numeric tensor (float32, float64, bfloat16, float16, int64, int32), got bool [2]", Error);
  CHECK_THROWS_WITH_AS(clamp(zeros({2}), {}, {}), "clamp: at least one of min and max must be given", Error);
  CHECK_THROWS_WITH_AS(clamp(zeros({2}), 2, 1), "clamp: min 2 is greater than max 1", Error);
  CHECK_THROWS_WITH_AS(clamp(i, 0.5, {}), doctest::Contains("clamp: scalar 0.5 does not fit the integer tensor"),
                       Error);
  CHECK_THROWS_WITH_AS(neg(Tensor()), "neg: undefined input", Error);
}
