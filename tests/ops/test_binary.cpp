// tests/ops/test_binary.cpp — add/sub/mul/div/pow/maximum/minimum and the
// scalar forms: forward against loops, broadcasting, gradchecks and
// gradgradchecks over layouts, a third derivative's error, dtype rules and
// errors. The tables binary_cases() and scalar_cases() are keyed by BinaryOps
// and ScalarOps.
#include "core/profiler.h"
#include "elementwise_ref.h"
#include "ops/ops_testing.h"

using namespace ks;
using namespace ks::testing;

namespace {

struct BinaryCase {
  const char* name;
  Tensor (*op)(const Tensor&, const Tensor&);
  double (*ref)(double, double);
  double lo, hi;  // input range (b is drawn from it too)
};
template <class Op> struct BinaryRow : BinaryCase {
  using op_type = Op;
  BinaryRow(Tensor (*f)(const Tensor&, const Tensor&), double (*r)(double, double), double lo, double hi)
      : BinaryCase{Op::name, f, r, lo, hi} {}
};
// One row per op of BinaryOps (ops/elementwise_formulas.h); a missing row fails to compile.
std::vector<BinaryCase> binary_cases() {
  using namespace binary_ops;
  std::tuple rows{
      BinaryRow<Add>(
          add, [](double x, double y) { return x + y; }, -2, 2),
      BinaryRow<Sub>(
          sub, [](double x, double y) { return x - y; }, -2, 2),
      BinaryRow<Mul>(
          mul, [](double x, double y) { return x * y; }, -2, 2),
      BinaryRow<Div>(
          div, [](double x, double y) { return x / y; }, 0.5, 2),
      BinaryRow<Pow>(
          pow, [](double x, double y) { return std::pow(x, y); }, 0.5, 2),
      BinaryRow<Maximum>(
          maximum, [](double x, double y) { return std::max(x, y); }, -2, 2),
      BinaryRow<Minimum>(
          minimum, [](double x, double y) { return std::min(x, y); }, -2, 2),
  };
  static_assert(covers<BinaryOps, decltype(rows)>, "every op of BinaryOps needs a row in binary_cases()");
  return std::apply([](const auto&... r) { return std::vector<BinaryCase>{r...}; }, rows);
}

struct ScalarCase {
  const char* call;  // the public function and its number, to tell rows apart in failures
  Tensor (*op)(const Tensor&);
  double (*ref)(double);
  double lo, hi;  // input range
  bool integers;  // also on int64/int32 (Op::integers, unless the function refuses them, as div)
};
template <class Op> struct ScalarRow : ScalarCase {
  using op_type = Op;
  ScalarRow(const char* call, Tensor (*f)(const Tensor&), double (*r)(double), double lo, double hi,
            bool integers = Op::integers)
      : ScalarCase{call, f, r, lo, hi, integers} {}
};
// One or more rows per op of ScalarOps (ops/elementwise_formulas.h), one per
// public function that runs it; a missing op fails to compile.
std::vector<ScalarCase> scalar_cases() {
  using namespace binary_ops;
  using X = const Tensor&;
  std::tuple rows{
      ScalarRow<AddScalar>(
          "add(x, 3)", [](X x) { return add(x, 3.0); }, [](double v) { return v + 3; }, -2, 2),
      ScalarRow<AddScalar>(
          "add(3, x)", [](X x) { return add(3.0, x); }, [](double v) { return 3 + v; }, -2, 2),
      ScalarRow<AddScalar>(
          "sub(x, 2)", [](X x) { return sub(x, 2.0); }, [](double v) { return v - 2; }, -2, 2),
      ScalarRow<MulScalar>(
          "mul(x, -2)", [](X x) { return mul(x, -2.0); }, [](double v) { return v * -2; }, -2, 2),
      ScalarRow<MulScalar>(
          "mul(3, x)", [](X x) { return mul(3.0, x); }, [](double v) { return 3 * v; }, -2, 2),
      ScalarRow<MulScalar>(
          "div(x, 4)", [](X x) { return div(x, 4.0); }, [](double v) { return v / 4; }, -2, 2, false),
      ScalarRow<RSubScalar>(
          "sub(3, x)", [](X x) { return sub(3.0, x); }, [](double v) { return 3 - v; }, -2, 2),
      ScalarRow<RDivScalar>(
          "div(2, x)", [](X x) { return div(2.0, x); }, [](double v) { return 2 / v; }, 0.5, 2),
  };
  static_assert(covers<ScalarOps, decltype(rows)>, "every op of ScalarOps needs a row in scalar_cases()");
  return std::apply([](const auto&... r) { return std::vector<ScalarCase>{r...}; }, rows);
}

}  // namespace

TEST_CASE("every binary op matches a loop, gradchecks and gradgradchecks, broadcast and permuted") {
  using V = const std::vector<Tensor>&;
  for (const BinaryCase& c : binary_cases()) {
    const std::string op_name = c.name;
    CAPTURE(op_name);
    auto f = c.op;
    Tensor a = leaf64({3, 1, 5}, 5, c.lo, c.hi), b = leaf64({4, 5}, 6, c.lo, c.hi);
    check_close(c.op(a, b), ref_binary(a, b, {3, 4, 5}, c.ref), 1e-12, 1e-12);
    Tensor a32 = to(a, kFloat32), p32 = permute(to(leaf64({5, 4}, 7, c.lo, c.hi), kFloat32), {1, 0});
    check_close(c.op(a32, p32), ref_binary(a32, p32, {3, 4, 5}, c.ref), 2e-6, 2e-6);
    check_grads_over_layouts([f](V v) { return f(v[0], v[1]); }, {{3, 4}, {4}}, 8, c.lo, c.hi);
    // Second derivatives with one input a constant (its own are not asked
    // for), and with the gradient reaching the op depending on the inputs.
    Tensor x = leaf64({3, 4}, 16, c.lo, c.hi), y = leaf64({3, 1}, 17, c.lo, c.hi);
    Tensor cx = detach(x), cy = detach(y);
    CHECK_GRADGRADCHECK([f, cy](V v) { return f(v[0], cy); }, {x});
    CHECK_GRADGRADCHECK([f, cx](V v) { return f(cx, v[0]); }, {y});
    CHECK_GRADGRADCHECK([f](V v) { return mul(f(v[0], v[1]), v[1]); }, {x, y});
  }
}

TEST_CASE("pow's second derivatives are exact, and its third names the op") {
  Tensor a = tensor({0.5, 2.0}, {2}, {.dtype = kFloat64, .requires_grad = true});
  Tensor b = tensor({3.0, -1.5}, {2}, {.dtype = kFloat64, .requires_grad = true});
  auto g = grad({sum(pow(a, b))}, {a, b}, {}, {.create_graph = true});
  CHECK(std::string(g[0].grad_fn()->name()) == "PowBackwardBackward");
  // d/da of (b a^(b-1)) = b (b-1) a^(b-2); d/db of (a^b log a) = a^b log² a.
  check_close(grad({sum(g[0])}, {a}, {}, {.retain_graph = true})[0],
              {3.0 * 2.0 * 0.5, -1.5 * -2.5 * std::pow(2.0, -3.5)}, 1e-14);
  check_close(grad({sum(g[1])}, {b}, {}, {.retain_graph = true})[0],
              {0.125 * std::log(0.5) * std::log(0.5), std::pow(2.0, -1.5) * std::log(2.0) * std::log(2.0)}, 1e-14);
  Tensor g2 = grad({sum(g[0])}, {b}, {}, {.create_graph = true})[0];
  CHECK_THROWS_WITH_AS(grad({sum(g2)}, {a}),
                       doctest::Contains("PowBackwardBackward does not support higher-order gradients"), Error);
}

TEST_CASE("binary ops broadcast and match a loop reference") {
  Tensor a = tensor({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = tensor({10, 20, 30}, {3});
  check_close(add(a, b), {11, 22, 33, 14, 25, 36});
  check_close(sub(a, b), {-9, -18, -27, -6, -15, -24});
  check_close(mul(a, b), {10, 40, 90, 40, 100, 180});
  check_close(div(b, a), {10, 10, 10, 2.5, 4, 5});
  Tensor col = tensor({1, 2}, {2, 1});
  CHECK(add(col, b).sizes() == Shape{2, 3});
  check_close(add(col, b), {11, 21, 31, 12, 22, 32});
  check_close(a * 2.0 + 1.0, {3, 5, 7, 9, 11, 13});
  check_close(1.0 + a / 2.0, {1.5, 2, 2.5, 3, 3.5, 4});
}

TEST_CASE("binary ops gradcheck with broadcast and non-contiguous inputs") {
  for (Layout l : all_layouts()) {
    CAPTURE(layout_name(l));
    Tensor a = leaf64({3, 4}, 1, l);
    Tensor b = leaf64({4}, 2, l);
    Tensor c = leaf64({3, 1}, 3, l, 0.5, 2.0);
    CHECK_GRADCHECK([](const std::vector<Tensor>& x) { return add(x[0], x[1]); }, {a, b});
    CHECK_GRADCHECK([](const std::vector<Tensor>& x) { return sub(x[0], x[1]); }, {a, c});
    CHECK_GRADCHECK([](const std::vector<Tensor>& x) { return mul(x[0], x[1]); }, {a, b});
    CHECK_GRADCHECK([](const std::vector<Tensor>& x) { return div(x[0], x[1]); }, {a, c});
    CHECK_GRADCHECK([](const std::vector<Tensor>& x) { return mul(div(x[0], 3.0) - 1.0, 2.0); }, {a});
  }
  // An expanded input: expand inside f.
  Tensor v = leaf64({1, 4}, 4);
  CHECK_GRADCHECK([](const std::vector<Tensor>& x) { return mul(expand(x[0], {3, 4}), x[0]); }, {v});
}

TEST_CASE("binary ops reject bad shapes and dtypes by name") {
  CHECK_THROWS_WITH_AS(add(zeros({2, 3}), zeros({4})),
                       "add: shapes [2, 3] and [4] are not broadcastable (dim -1: 3 vs 4)", Error);
}

TEST_CASE("every scalar form matches a loop in each dtype it takes and gradchecks") {
  using V = const std::vector<Tensor>&;
  for (const ScalarCase& c : scalar_cases()) {
    const std::string call = c.call;
    CAPTURE(call);
    Tensor x = leaf64({3, 4}, 10, c.lo, c.hi);
    check_close(c.op(x), ref_unary(x, c.ref), 1e-12, 1e-12);
    // float32 on a row long enough to be split across threads, and transposed.
    Tensor x32 = to(leaf64({2, 16500}, 14, c.lo, c.hi), kFloat32);
    check_close(c.op(x32), ref_unary(x32, c.ref), 2e-6, 2e-6);
    Tensor t32 = transpose(to(leaf64({3, 101}, 15, c.lo, c.hi), kFloat32), 0, 1);
    check_close(c.op(t32), ref_unary(t32, c.ref), 2e-6, 2e-6);
    if (c.integers)
      for (DType dt : {kInt64, kInt32}) {
        CAPTURE(name(dt));
        Tensor i = small_ints({4, 5}, 16, dt, -50, 50);
        CHECK(c.op(i).dtype() == dt);
        check_close(c.op(i), ref_unary(i, c.ref), 0);
      }
    auto f = c.op;
    for (Layout l : all_layouts()) {
      CAPTURE(layout_name(l));
      CHECK_GRADCHECK([f](V a) { return f(a[0]); }, {leaf64({3, 4}, 11, l, c.lo, c.hi)});
    }
    CHECK_GRADCHECK([f](V a) { return f(expand(a[0], {3, 4})); }, {leaf64({1, 4}, 13, c.lo, c.hi)});
  }
}

TEST_CASE("scalar operators match loops and gradcheck") {
  Tensor x = tensor({-2, -0.5, 1, 4}, {2, 2}, {.dtype = kFloat64});
  check_close(1.0 - x, ref_unary(x, [](double v) { return 1.0 - v; }));
  check_close(2.0 / x, ref_unary(x, [](double v) { return 2.0 / v; }));
  check_close(3.0 * x, ref_unary(x, [](double v) { return 3.0 * v; }));
  check_close(0.5 + x, ref_unary(x, [](double v) { return 0.5 + v; }));
  check_close(x - 1.5, ref_unary(x, [](double v) { return v - 1.5; }));
  check_close(-x, ref_unary(x, [](double v) { return -v; }));
  check_close(x / 4.0, ref_unary(x, [](double v) { return v / 4.0; }));
  // Integer tensors: integral scalars only.
  Tensor i = tensor({-3, 0, 7}, {3}, {.dtype = kInt64});
  CHECK((i * 2.0).dtype() == kInt64);
  check_close(10.0 - i * 2.0 + 1.0, {17, 11, -3});
  check_close(-i, {3, 0, -7});
  using V = const std::vector<Tensor>&;
  for (Layout l : all_layouts()) {
    CAPTURE(layout_name(l));
    Tensor a = leaf64({3, 4}, 11, l);
    Tensor p = leaf64({3, 4}, 12, l, 0.5, 2.0);
    CHECK_GRADCHECK([](V v) { return 1.0 - v[0] * 3.0 + (-v[0]) / 2.0; }, {a});
    CHECK_GRADCHECK([](V v) { return 2.0 / v[0] - 4.0; }, {p});
  }
}

TEST_CASE("pow(Tensor, Tensor) broadcasts and matches a loop") {
  Tensor a = leaf64({2, 3}, 21, 0.5, 2.0), b = leaf64({3}, 22, -2.0, 2.0);
  check_close(pow(a, b), ref_binary(a, b, {2, 3}, [](double x, double y) { return std::pow(x, y); }), 1e-12);
  Tensor af = to(a, kFloat32), bf = to(b, kFloat32);
  check_close(pow(af, bf), ref_binary(af, bf, {2, 3}, [](double x, double y) { return std::pow(x, y); }), 1e-6);
  // 0 ** b: the gradient wrt b is 0 (not NaN) for b >= 0, wrt a follows b a^(b-1).
  Tensor z = tensor({0, 0}, {2}, {.dtype = kFloat64, .requires_grad = true});
  Tensor e = tensor({2, 0}, {2}, {.dtype = kFloat64, .requires_grad = true});
  backward(sum(pow(z, e)));
  check_close(z.grad(), {0, 0});
  check_close(e.grad(), {0, 0});
}

TEST_CASE("pow(Tensor, Tensor) gradcheck") {
  using V = const std::vector<Tensor>&;
  for (Layout l : all_layouts()) {
    CAPTURE(layout_name(l));
    Tensor a = leaf64({3, 4}, 23, l, 0.5, 2.0);
    Tensor b = leaf64({4}, 24, l, -1.5, 2.5);
    Tensor c = leaf64({3, 1}, 25, l, 0.5, 2.0);
    CHECK_GRADCHECK([](V x) { return pow(x[0], x[1]); }, {a, b});
    CHECK_GRADCHECK([](V x) { return pow(x[1], x[0]); }, {c, a});
  }
  Tensor v = leaf64({1, 4}, 26, 0.5, 2.0), w = leaf64({3, 4}, 27, -1, 1);
  CHECK_GRADCHECK([](V x) { return pow(expand(x[0], {3, 4}), x[1]); }, {v, w});
}

TEST_CASE("maximum and minimum: loops, NaN, ties, integers") {
  Tensor a = leaf64({2, 3}, 31), b = leaf64({2, 1}, 32);
  check_close(maximum(a, b), ref_binary(a, b, {2, 3}, [](double x, double y) { return std::max(x, y); }), 0);
  check_close(minimum(b, a), ref_binary(b, a, {2, 3}, [](double x, double y) { return std::min(x, y); }), 0);
  Tensor i = small_ints({4, 5}, 33, kInt64), j = small_ints({5}, 34, kInt64);
  CHECK(maximum(i, j).dtype() == kInt64);
  check_close(maximum(i, j), ref_binary(i, j, {4, 5}, [](double x, double y) { return std::max(x, y); }), 0);
  check_close(minimum(i, j), ref_binary(i, j, {4, 5}, [](double x, double y) { return std::min(x, y); }), 0);
  Tensor k = small_ints({3}, 35, kInt32);
  check_close(minimum(k, k), k.to_vector<double>(), 0);
  // NaN in either operand wins.
  Tensor n = tensor({NAN, 1, 2}, {3}), m = tensor({0, NAN, 1}, {3});
  check_close(maximum(n, m), {NAN, NAN, 2});
  check_close(minimum(n, m), {NAN, NAN, 1});
  // Ties split the gradient evenly.
  Tensor p = tensor({1, 2, 3}, {3}, {.dtype = kFloat64, .requires_grad = true});
  Tensor q = tensor({1, 5, 0}, {3}, {.dtype = kFloat64, .requires_grad = true});
  backward(sum(maximum(p, q)));
  check_close(p.grad(), {0.5, 0, 1});
  check_close(q.grad(), {0.5, 1, 0});
  p.set_grad(Tensor());
  q.set_grad(Tensor());
  backward(sum(minimum(p, q)));
  check_close(p.grad(), {0.5, 1, 0});
  check_close(q.grad(), {0.5, 0, 1});
}

TEST_CASE("maximum and minimum gradcheck") {
  using V = const std::vector<Tensor>&;
  for (Layout l : all_layouts()) {
    CAPTURE(layout_name(l));
    Tensor a = leaf64({3, 4}, 36, l), b = leaf64({4}, 37, l), c = leaf64({3, 1}, 38, l);
    CHECK_GRADCHECK([](V x) { return maximum(x[0], x[1]); }, {a, b});
    CHECK_GRADCHECK([](V x) { return minimum(x[0], x[1]); }, {a, c});
  }
  Tensor v = leaf64({1, 4}, 39), w = leaf64({3, 4}, 40);
  CHECK_GRADCHECK([](V x) { return maximum(expand(x[0], {3, 4}), x[1]); }, {v, w});
}

TEST_CASE("integer arithmetic matches loops") {
  for (DType dt : {kInt64, kInt32}) {
    CAPTURE(name(dt));
    Tensor a = small_ints({3, 4}, 41, dt, -50, 50), b = small_ints({4}, 42, dt, -50, 50);
    CHECK(add(a, b).dtype() == dt);
    check_close(add(a, b), ref_binary(a, b, {3, 4}, [](double x, double y) { return x + y; }), 0);
    check_close(sub(a, b), ref_binary(a, b, {3, 4}, [](double x, double y) { return x - y; }), 0);
    check_close(mul(a, b), ref_binary(a, b, {3, 4}, [](double x, double y) { return x * y; }), 0);
  }
}

TEST_CASE("binary dtype rules name the op") {
  Tensor bl = tensor({1, 0}, {2}, {.dtype = kBool});
  CHECK_THROWS_WITH_AS(
      add(bl, bl), "add: expected a numeric tensor (float32, float64, bfloat16, float16, int64, int32), got bool [2]",
      Error);
  CHECK_THROWS_WITH_AS(maximum(bl, bl), doctest::Contains("maximum: expected a numeric tensor"), Error);
  Tensor i = zeros({2}, {.dtype = kInt64});
  CHECK_THROWS_WITH_AS(pow(i, i),
                       "pow: expected a floating tensor (float32, float64, bfloat16, float16), got int64 [2]", Error);
  CHECK_THROWS_WITH_AS(add(i, 2.5),
                       "add: scalar 2.5 does not fit the integer tensor int64 [2] (use an integer in range, or a "
                       "float tensor)",
                       Error);
  CHECK_THROWS_WITH_AS(sub(1.0, bl), doctest::Contains("sub: expected a numeric tensor"), Error);
  CHECK_THROWS_WITH_AS(maximum(zeros({2}), zeros({3})),
                       "maximum: shapes [2] and [3] are not broadcastable (dim -1: 2 vs 3)", Error);
}

// The CPU loop runs a row with an input broadcast along it (stride 0) through
// its contiguous, vectorised loop, the value repeated into a buffer a piece
// (256) at a time (ops/cpu/loops.h): the bits must be those of the same op on
// contiguous copies, in every dtype, for rows shorter than, equal to and
// longer than a piece, with either input, both, or a condition broadcast.
TEST_CASE("a value broadcast along a row gives the bits of its contiguous copy") {
  for (DType d : {kFloat32, kFloat64, kInt32, kBFloat16}) {
    for (int64_t n : {int64_t(7), int64_t(32), int64_t(256), int64_t(700)}) {
      CAPTURE(d);
      CAPTURE(n);
      const bool floating = d != kInt32;
      const Tensor rows = to(leaf64({5, n}, 21, 0.5, 3.0), d);  // (5, n), > 0 for div and pow
      const Tensor per_row = to(leaf64({5, 1}, 22, 0.5, 3.0), d);
      const Tensor one = to(leaf64({1, 1}, 23, 0.5, 3.0), d);
      const Tensor wide = expand(per_row, {5, n}), wide_one = expand(one, {5, n});
      const Tensor copy = contiguous(wide), copy_one = contiguous(wide_one);
      for (const BinaryCase& c : binary_cases()) {
        if (!floating && (std::string(c.name) == "div" || std::string(c.name) == "pow")) continue;
        const std::string op_name = c.name;
        CAPTURE(op_name);
        CHECK(same_bits(c.op(wide, rows), c.op(copy, rows)));
        CHECK(same_bits(c.op(rows, wide), c.op(rows, copy)));
        CHECK(same_bits(c.op(wide, wide_one), c.op(copy, copy_one)));
      }
      CHECK(same_bits(gt(rows, wide), gt(rows, copy)));
      const Tensor cond = expand(gt(per_row, 1.5), {5, n});
      CHECK(same_bits(where(cond, rows, wide_one), where(contiguous(cond), rows, copy_one)));
    }
  }
}

// mul(x, x) hands x the product g · x twice, computed once (one binary
// kernel call in the backward, counted by core/profiler.h), and x's gradient
// sums the terms in the order the two separate products did: after the
// gradient of a later use of x, (g·3 + g·x) + g·x, bit for bit.
TEST_CASE("mul(x, x) computes g · x once and accumulates it twice, with the bits of two products") {
  const Tensor x = detach(to(leaf64({64, 33}, 31, -2, 2), kFloat32)).set_requires_grad(true);
  const Tensor g = detach(to(leaf64({64, 33}, 32, -2, 2), kFloat32));
  profiler::reset();
  profiler::enable(true);
  const Tensor square = mul(x, x), tripled = mul(x, 3.0);  // in this order: tripled's backward runs first
  backward(add(square, tripled), g);
  profiler::enable(false);
  int64_t binary_calls = 0;
  for (const profiler::Row& r : profiler::rows())
    if (r.phase == "backward" && r.kernel == "binary") binary_calls += r.calls;
  CHECK(binary_calls == 1);
  const std::vector<float> xs = detach(x).to_vector<float>(), gs = g.to_vector<float>();
  std::vector<float> expected(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) {
    const volatile float by_scalar = gs[i] * 3.0f, by_square = gs[i] * xs[i];  // each product rounded, as the kernels
    const volatile float first = by_scalar + by_square;
    expected[i] = first + by_square;
  }
  CHECK(same_bits(x.grad(), from_vector(expected, x.sizes())));
}
