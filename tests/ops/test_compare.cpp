// tests/ops/test_compare.cpp — comparisons, logical ops, where and
// masked_fill: against loops on broadcast shapes, NaN and integer rules,
// gradchecks of where/masked_fill, errors. The tables cmp_cases() and
// logical_cases() are keyed by CompareOps and LogicalOps.
#include "elementwise_ref.h"

using namespace ks;
using namespace ks::testing;

namespace {
using V = const std::vector<Tensor>&;

struct CmpCase {
  const char* name;
  Tensor (*tt)(const Tensor&, const Tensor&);
  Tensor (*ts)(const Tensor&, double);
  bool (*ref)(double, double);
};
template <class Op> struct CmpRow : CmpCase {
  using op_type = Op;
  CmpRow(Tensor (*tt)(const Tensor&, const Tensor&), Tensor (*ts)(const Tensor&, double), bool (*ref)(double, double))
      : CmpCase{Op::name, tt, ts, ref} {}
};
// One row per op of CompareOps (ops/compare_formulas.h); a missing row fails to compile.
std::vector<CmpCase> cmp_cases() {
  using namespace compare_ops;
  std::tuple rows{
      CmpRow<Eq>(eq, eq, [](double x, double y) { return x == y; }),
      CmpRow<Ne>(ne, ne, [](double x, double y) { return x != y; }),
      CmpRow<Lt>(lt, lt, [](double x, double y) { return x < y; }),
      CmpRow<Le>(le, le, [](double x, double y) { return x <= y; }),
      CmpRow<Gt>(gt, gt, [](double x, double y) { return x > y; }),
      CmpRow<Ge>(ge, ge, [](double x, double y) { return x >= y; }),
  };
  static_assert(covers<CompareOps, decltype(rows)>, "every op of CompareOps needs a row in cmp_cases()");
  return std::apply([](const auto&... r) { return std::vector<CmpCase>{r...}; }, rows);
}

struct LogicalCase {
  const char* name;
  Tensor (*op)(const Tensor&, const Tensor&);  // b unused by logical_not
  bool (*ref)(bool, bool);
};
template <class Op> struct LogicalRow : LogicalCase {
  using op_type = Op;
  LogicalRow(Tensor (*op)(const Tensor&, const Tensor&), bool (*ref)(bool, bool)) : LogicalCase{Op::name, op, ref} {}
};
// One row per op of LogicalOps (ops/compare_formulas.h); a missing row fails to compile.
std::vector<LogicalCase> logical_cases() {
  using namespace compare_ops;
  std::tuple rows{
      LogicalRow<LogicalNot>([](const Tensor& a, const Tensor&) { return logical_not(a); },
                             [](bool x, bool) { return !x; }),
      LogicalRow<LogicalAnd>(logical_and, [](bool x, bool y) { return x && y; }),
      LogicalRow<LogicalOr>(logical_or, [](bool x, bool y) { return x || y; }),
  };
  static_assert(covers<LogicalOps, decltype(rows)>, "every op of LogicalOps needs a row in logical_cases()");
  return std::apply([](const auto&... r) { return std::vector<LogicalCase>{r...}; }, rows);
}

Tensor random_mask(const Shape& shape, uint64_t seed) {
  Generator g(seed);
  return to(bernoulli(shape, 0.5, {}, &g), kBool);
}
}  // namespace

TEST_CASE("comparisons broadcast and match loops for every numeric dtype") {
  for (const CmpCase& c : cmp_cases()) {
    const std::string op = c.name;
    CAPTURE(op);
    for (DType dt : {kFloat32, kFloat64, kInt64, kInt32}) {
      CAPTURE(name(dt));
      // Small integers, so that equal pairs occur.
      Tensor a = small_ints({3, 1, 5}, 61, dt), b = small_ints({4, 5}, 62, dt);
      Tensor r = c.tt(a, b);
      CHECK(r.dtype() == kBool);
      CHECK(r.sizes() == Shape{3, 4, 5});
      check_close(r, ref_binary(a, b, {3, 4, 5}, [&](double x, double y) { return double(c.ref(x, y)); }), 0);
      // A permuted operand takes the strided path.
      Tensor p = permute(small_ints({5, 4}, 63, dt), {1, 0});
      check_close(c.tt(p, b), ref_binary(p, b, {4, 5}, [&](double x, double y) { return double(c.ref(x, y)); }), 0);
      check_close(c.ts(a, 1.0), ref_unary(a, [&](double x) { return double(c.ref(x, 1.0)); }), 0);
    }
  }
}

TEST_CASE("comparisons: NaN, scalars against integers and floats, no gradient") {
  Tensor n = tensor({NAN, 1, 2});
  check_close(eq(n, n), {0, 1, 1});
  check_close(ne(n, n), {1, 0, 0});
  check_close(lt(n, 1.5), {0, 1, 0});
  check_close(ne(n, NAN), {1, 1, 1});
  // An integer tensor compares with the exact number, not a truncated one.
  Tensor i = tensor({1, 2, 3}, {3}, {.dtype = kInt64});
  check_close(lt(i, 2.5), {1, 1, 0});
  check_close(ge(i, 2.5), {0, 0, 1});
  check_close(eq(i, 2.0), {0, 1, 0});
  check_close(eq(i, 2.5), {0, 0, 0});
  check_close(lt(i, 1e30), {1, 1, 1});
  check_close(gt(tensor({3e9}, {1}, {.dtype = kInt64}), 2147483648.0), {1});
  // A float32 tensor compares with the number rounded to float32.
  Tensor f = tensor({0.1});
  check_close(eq(f, 0.1), {1});
  Tensor x = ones({2}, {.requires_grad = true});
  CHECK_FALSE(gt(x, 0.0).requires_grad());
  CHECK_FALSE(eq(x, x).requires_grad());
}

TEST_CASE("every logical op matches a loop on broadcast and transposed masks, and takes bool only") {
  Tensor a = random_mask({3, 4}, 64), b = random_mask({4}, 65), t = transpose(random_mask({4, 3}, 67), 0, 1);
  for (const LogicalCase& c : logical_cases()) {
    const std::string op = c.name;
    CAPTURE(op);
    auto ref = [&](double x, double y) { return double(c.ref(x != 0, y != 0)); };
    Tensor r = c.op(a, b);
    CHECK(r.dtype() == kBool);
    CHECK(r.sizes() == Shape{3, 4});
    // logical_not reads its first input only, so its reference ignores b.
    check_close(r, ref_binary(a, b, {3, 4}, ref), 0);
    check_close(c.op(t, a), ref_binary(t, a, {3, 4}, ref), 0);
    const std::string not_bool = op + ": input must be a bool tensor, got float32 [4]";
    CHECK_THROWS_WITH_AS(c.op(ones({4}), ones({4})), not_bool.c_str(), Error);
  }
  CHECK_THROWS_WITH_AS(logical_and(a, ones({4})), "logical_and: input must be a bool tensor, got float32 [4]", Error);
  CHECK_THROWS_WITH_AS(logical_not(zeros({2}, {.dtype = kInt64})),
                       "logical_not: input must be a bool tensor, got int64 [2]", Error);
}

TEST_CASE("where broadcasts all three inputs and matches a loop") {
  Tensor c = random_mask({3, 1}, 66);
  for (DType dt : {kFloat32, kFloat64, kInt64, kInt32, kBool}) {
    CAPTURE(name(dt));
    Tensor a = to(leaf64({1, 4}, 67), dt), b = to(leaf64({2, 3, 4}, 68, 1, 5), dt);
    Tensor r = where(c, a, b);
    CHECK(r.sizes() == Shape{2, 3, 4});
    CHECK(r.dtype() == dt);
    check_close(r, ref_ternary(c, a, b, {2, 3, 4}, [](double m, double x, double y) { return m ? x : y; }), 0);
  }
  // Masked attention scores: a 0-dim fill value.
  Tensor s = leaf64({2, 3, 3}, 69), causal = random_mask({3, 3}, 70);
  Tensor ninf = full({}, -INFINITY, {.dtype = kFloat64});
  check_close(where(causal, ninf, s),
              ref_ternary(causal, ninf, s, {2, 3, 3}, [](double m, double x, double y) { return m ? x : y; }), 0);
}

TEST_CASE("where gradcheck sums gradients to each input's shape") {
  Tensor c = random_mask({3, 4}, 71);
  for (Layout l : all_layouts()) {
    CAPTURE(layout_name(l));
    Tensor a = leaf64({3, 4}, 72, l), b = leaf64({4}, 73, l), d = leaf64({3, 1}, 74, l);
    CHECK_GRADCHECK([c](V x) { return where(c, x[0], x[1]); }, {a, b});
    CHECK_GRADCHECK([c](V x) { return where(c, x[1], x[0]); }, {d, a});
    Tensor pc = permute(random_mask({4, 3}, 75), {1, 0});
    CHECK_GRADCHECK([pc](V x) { return where(pc, x[0], x[1]); }, {b, d});
  }
  Tensor v = leaf64({1, 4}, 76), w = leaf64({}, 77);
  CHECK_GRADCHECK([c](V x) { return where(c, expand(x[0], {3, 4}), x[1]); }, {v, w});
  // Gradient to a lands exactly where cond holds.
  Tensor a = zeros({3, 4}, {.dtype = kFloat64, .requires_grad = true});
  Tensor b = zeros({1}, {.dtype = kFloat64, .requires_grad = true});
  backward(sum(where(c, a, b)));
  check_close(a.grad(), ref_unary(c, [](double m) { return m; }));
  double holds = 0;
  for (double m : c.to_vector<double>()) holds += m;
  check_close(b.grad(), {12 - holds});
}

TEST_CASE("masked_fill broadcasts the mask and zeroes the gradient where filled") {
  Tensor x = leaf64({2, 3, 4}, 78), mask = random_mask({3, 1}, 79);
  check_close(masked_fill(x, mask, -7.5),
              ref_binary(x, mask, {2, 3, 4}, [](double v, double m) { return m ? -7.5 : v; }), 0);
  Tensor xf = to(x, kFloat32);
  check_close(masked_fill(xf, mask, -INFINITY),
              ref_binary(xf, mask, {2, 3, 4}, [](double v, double m) { return m ? -INFINITY : v; }), 0);
  Tensor xi = small_ints({2, 3, 4}, 80, kInt64);
  check_close(masked_fill(xi, mask, 9), ref_binary(xi, mask, {2, 3, 4}, [](double v, double m) { return m ? 9 : v; }),
              0);
  for (Layout l : all_layouts()) {
    CAPTURE(layout_name(l));
    Tensor y = leaf64({3, 4}, 81, l);
    CHECK_GRADCHECK([mask](V a) { return masked_fill(a[0], mask, 2.0); }, {y});
  }
  Tensor row = leaf64({1, 4}, 82);
  Tensor m2 = random_mask({3, 4}, 83);
  CHECK_GRADCHECK([m2](V a) { return masked_fill(expand(a[0], {3, 4}), m2, 0.0); }, {row});
  Tensor z = zeros({3, 4}, {.dtype = kFloat64, .requires_grad = true});
  backward(sum(masked_fill(z, m2, 1.0)));
  check_close(z.grad(), ref_unary(m2, [](double m) { return m ? 0.0 : 1.0; }));
}

TEST_CASE("compare, where and masked_fill errors name the op") {
  CHECK_THROWS_WITH_AS(eq(zeros({2, 3}), zeros({4})),
                       "eq: shapes [2, 3] and [4] are not broadcastable (dim -1: 3 vs 4)", Error);
  Tensor m = tensor({1, 0}, {2}, {.dtype = kBool});
  CHECK_THROWS_WITH_AS(
      ge(m, 0.0), "ge: expected a numeric tensor (float32, float64, bfloat16, float16, int64, int32), got bool [2]",
      Error);
  CHECK_THROWS_WITH_AS(where(ones({2}), ones({2}), ones({2})),
                       "where: condition must be a bool tensor, got float32 [2]", Error);
  CHECK_THROWS_WITH_AS(where(m, ones({3}), ones({2})),
                       "where: shapes [2] and [3] and [2] are not broadcastable (dim -1: 2 vs 3)", Error);
  CHECK_THROWS_WITH_AS(masked_fill(ones({2}), ones({2}), 0.0),
                       "masked_fill: mask must be a bool tensor, got float32 [2]", Error);
  CHECK_THROWS_WITH_AS(masked_fill(ones({2}), tensor({1, 0, 1, 0}, {2, 2}, {.dtype = kBool}), 0.0),
                       "masked_fill: mask bool [2, 2] does not broadcast to the input's shape [2]", Error);
  CHECK_THROWS_WITH_AS(masked_fill(zeros({2}, {.dtype = kInt32}), m, 0.5),
                       doctest::Contains("masked_fill: scalar 0.5 does not fit the integer tensor int32 [2]"), Error);
}
