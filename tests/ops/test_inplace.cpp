// tests/ops/test_inplace.cpp — in-place updates: values against loops with
// broadcast operands and strided targets, version bumps, the no-history
// rules, overlap between operand and target, and errors. The fused updates'
// table, inplace_cases(), is keyed by InplaceOps.
#include "elementwise_ref.h"

using namespace ks;
using namespace ks::testing;

namespace {

// A float64 tensor that does not require grad (an optimizer buffer).
Tensor buf64(const Shape& shape, uint64_t seed, double lo = -1, double hi = 1) {
  return detach(leaf64(shape, seed, lo, hi));
}

// Runs update(t) on a fresh copy of `init` and checks the result against
// ref (on the values before), the version bump and the returned handle.
template <class U> void check_update(const Tensor& init, const std::vector<double>& expected, U update) {
  Tensor t = clone(init);
  const uint64_t v = t.version();
  Tensor r = update(t);
  CHECK(r.is_same(t));
  CHECK(t.version() > v);
  check_close(t, expected, 1e-12, 1e-12);
}

struct InplaceCase {
  const char* call;  // the public function and its numbers, to tell rows apart in failures
  Tensor (*op)(const Tensor& t, const Tensor& a, const Tensor& b);  // b unused by the one-operand updates
  double (*ref)(double t, double a, double b);
  bool integers;  // also on int64/int32 (Op::integers, with an integral alpha)
};
template <class Op> struct InplaceRow : InplaceCase {
  using op_type = Op;
  InplaceRow(const char* call, Tensor (*f)(const Tensor&, const Tensor&, const Tensor&),
             double (*r)(double, double, double), bool integers = Op::integers)
      : InplaceCase{call, f, r, integers} {}
};
// One or more rows per op of InplaceOps (ops/elementwise_formulas.h), one per
// public function that runs it; a missing op fails to compile.
std::vector<InplaceCase> inplace_cases() {
  using namespace binary_ops;
  using X = const Tensor&;
  std::tuple rows{
      InplaceRow<AddScaled>(
          "add_(t, a)", [](X t, X a, X) { return add_(t, a); }, [](double t, double a, double) { return t + a; }),
      InplaceRow<AddScaled>(
          "add_(t, a, 3)", [](X t, X a, X) { return add_(t, a, 3.0); },
          [](double t, double a, double) { return t + 3 * a; }),
      InplaceRow<AddScaled>(
          "sub_(t, a, 2)", [](X t, X a, X) { return sub_(t, a, 2.0); },
          [](double t, double a, double) { return t - 2 * a; }),
      InplaceRow<AddScaled>(
          "add_(t, a, 0.3)", [](X t, X a, X) { return add_(t, a, 0.3); },
          [](double t, double a, double) { return t + 0.3 * a; }, false),
      InplaceRow<Addcmul>(
          "addcmul_(t, a, b, -0.1)", [](X t, X a, X b) { return addcmul_(t, a, b, -0.1); },
          [](double t, double a, double b) { return t - 0.1 * a * b; }),
      InplaceRow<Addcdiv>(
          "addcdiv_(t, a, b, 0.01)", [](X t, X a, X b) { return addcdiv_(t, a, b, 0.01); },
          [](double t, double a, double b) { return t + 0.01 * a / b; }),
  };
  static_assert(covers<InplaceOps, decltype(rows)>, "every op of InplaceOps needs a row in inplace_cases()");
  return std::apply([](const auto&... r) { return std::vector<InplaceCase>{r...}; }, rows);
}

}  // namespace

TEST_CASE("every fused in-place update matches a loop in each dtype it takes, operands broadcast") {
  for (const InplaceCase& c : inplace_cases()) {
    const std::string call = c.call;
    CAPTURE(call);
    // Operands a (4) and b (3, 1) broadcast over the target (3, 4); b is a divisor.
    Tensor t = buf64({3, 4}, 81), a = buf64({4}, 82), b = buf64({3, 1}, 83, 0.5, 2.0);
    check_update(t, ref_ternary(t, a, b, {3, 4}, c.ref), [&](Tensor x) { return c.op(x, a, b); });
    // A transposed target: each of its elements, and only those, change.
    Tensor base = buf64({4, 3}, 84);
    Tensor tt = transpose(base, 0, 1);
    std::vector<double> want = ref_ternary(tt, a, b, {3, 4}, c.ref);
    c.op(tt, a, b);
    check_close(tt, want, 1e-12, 1e-12);
    // float32 on a long row (the vectorised path), as the optimizers run them.
    Tensor f = to(buf64({40001}, 85), kFloat32), fa = to(buf64({40001}, 86), kFloat32),
           fb = to(buf64({40001}, 87, 0.5, 1.0), kFloat32);
    std::vector<double> fe = ref_ternary(f, fa, fb, {40001}, c.ref);
    c.op(f, fa, fb);
    check_close(f, fe, 1e-6, 1e-5);
    if (c.integers)
      for (DType dt : {kInt64, kInt32}) {
        CAPTURE(name(dt));
        Tensor i = small_ints({3, 4}, 88, dt, -50, 50), ia = small_ints({4}, 89, dt, -50, 50);
        std::vector<double> ie = ref_ternary(i, ia, ia, {3, 4}, c.ref);
        CHECK(c.op(i, ia, ia).dtype() == dt);
        check_close(i, ie, 0);
      }
  }
}

TEST_CASE("in-place arithmetic matches loops, operands broadcast to the target") {
  Tensor t = buf64({3, 4}, 91), p = buf64({3, 1}, 93, 0.5, 2.0);
  const Shape s{3, 4};
  check_update(t, ref_binary(t, p, s, [](double x, double y) { return x * y; }), [&](Tensor x) { return mul_(x, p); });
  check_update(t, ref_binary(t, p, s, [](double x, double y) { return x / y; }), [&](Tensor x) { return div_(x, p); });
  check_update(t, ref_unary(t, [](double x) { return x + 1.5; }), [](Tensor x) { return add_(x, 1.5); });
  check_update(t, ref_unary(t, [](double x) { return x - 1.5; }), [](Tensor x) { return sub_(x, 1.5); });
  check_update(t, ref_unary(t, [](double x) { return x * 0.9; }), [](Tensor x) { return mul_(x, 0.9); });
  check_update(t, ref_unary(t, [](double x) { return x / 4.0; }), [](Tensor x) { return div_(x, 4.0); });
  Tensor q = buf64({3, 4}, 94, 0.1, 4.0);
  check_update(q, ref_unary(q, [](double x) { return std::sqrt(x); }), [](Tensor x) { return sqrt_(x); });
  check_update(t, ref_unary(t, [](double x) { return std::min(std::max(x, -0.2), 0.3); }),
               [](Tensor x) { return clamp_(x, -0.2, 0.3); });
  check_update(t, ref_unary(t, [](double) { return 0.0; }), [](Tensor x) { return zero_(x); });
  Tensor m = to(tensor({1, 0, 0, 1}, {4}), kBool);
  check_update(t, ref_binary(t, m, s, [](double x, double b) { return b ? -1e9 : x; }),
               [&](Tensor x) { return masked_fill_(x, m, -1e9); });
}

TEST_CASE("in-place ops on strided targets and float32/integer dtypes") {
  // A sliced target: only its own elements change (a transposed one: the fused updates' test).
  Tensor wide = buf64({2, 6}, 97);
  Tensor wide_before = clone(wide);
  mul_(slice(wide, 1, 0, 6, 2), 10.0);
  std::vector<double> w = wide_before.to_vector<double>();
  for (size_t i = 0; i < w.size(); ++i)
    if ((i % 6) % 2 == 0) w[i] *= 10;
  check_close(wide, w, 1e-12);
  // Integers.
  Tensor i = tensor({1, 2, 3}, {3}, {.dtype = kInt64});
  add_(i, tensor({10, 20, 30}, {3}, {.dtype = kInt64}), 2.0);
  mul_(i, 3.0);
  sub_(i, 1.0);
  clamp_(i, {}, 150);
  check_close(i, {62, 125, 150}, 0);
  // Bool masks can be edited in place too.
  Tensor mask = to(tensor({0, 1, 0}), kBool);
  masked_fill_(mask, to(tensor({1, 0, 0}), kBool), 1);
  check_close(mask, {1, 1, 0}, 0);
  // Empty targets are fine and still bump the version.
  Tensor e = zeros({0, 3});
  const uint64_t v = e.version();
  add_(e, ones({3}));
  CHECK(e.version() > v);
}

TEST_CASE("in-place ops refuse history and bump versions for saved-tensor checks") {
  Tensor w = ones({3}, {.requires_grad = true});
  CHECK_THROWS_WITH_AS(add_(w, ones({3})),
                       "add_: in-place operation on a tensor that requires grad; wrap it in NoGradGuard", Error);
  CHECK_THROWS_WITH_AS(mul_(w, 2.0), "mul_: in-place operation on a tensor that requires grad; wrap it in NoGradGuard",
                       Error);
  CHECK_THROWS_WITH_AS(zero_(w), "zero_: in-place operation on a tensor that requires grad; wrap it in NoGradGuard",
                       Error);
  Tensor buf = zeros({3});
  CHECK_THROWS_WITH_AS(add_(buf, w), doctest::Contains("add_: operand float32 [3] requires grad"), Error);
  {
    // An optimizer step: allowed under NoGradGuard, the parameter stays a leaf.
    NoGradGuard g;
    sub_(w, ones({3}), 0.5);
    addcmul_(buf, w, w, 1.0);
  }
  check_close(w, {0.5, 0.5, 0.5});
  check_close(buf, {0.25, 0.25, 0.25});
  CHECK(w.is_leaf());
  CHECK(w.requires_grad());
  // exp saves its output; changing it afterwards is caught at backward.
  Tensor x = ones({2}, {.dtype = kFloat64, .requires_grad = true});
  Tensor y = exp(x);
  {
    NoGradGuard g;
    mul_(y, 2.0);
  }
  CHECK_THROWS_WITH_AS(backward(sum(y)), doctest::Contains("modified by an in-place operation"), Error);
  // Writing through a view bumps the shared version too.
  Tensor z = exp(x);
  {
    NoGradGuard g;
    masked_fill_(slice(z, 0, 0, 1), to(ones({1}), kBool), 0.0);
  }
  CHECK_THROWS_WITH_AS(backward(sum(z)), doctest::Contains("modified by an in-place operation"), Error);
}

TEST_CASE("an operand overlapping the target is read before it is written") {
  Tensor base = view(arange(16, {.dtype = kFloat64}), {4, 4});
  Tensor expect = add(base, transpose(base, 0, 1));
  add_(base, transpose(base, 0, 1));
  check_close(base, expect, 0);
  // A row of the target broadcast over it.
  Tensor m = view(arange(1, 7, 1, {.dtype = kFloat64}), {2, 3});
  Tensor expect2 = mul(m, select(m, 0, 0));
  mul_(m, select(m, 0, 0));
  check_close(m, expect2, 0);
  // Disjoint views of one buffer need no copy and stay correct.
  Tensor flat = arange(8, {.dtype = kFloat64});
  add_(narrow(flat, 0, 0, 4), narrow(flat, 0, 4, 4));
  check_close(flat, {4, 6, 8, 10, 4, 5, 6, 7}, 0);
  // Element-for-element aliasing is fine as is.
  Tensor s = tensor({1, 2, 3}, {3}, {.dtype = kFloat64});
  addcmul_(s, s, s, 1.0);
  check_close(s, {2, 6, 12}, 0);
}

TEST_CASE("in-place errors name the op") {
  CHECK_THROWS_WITH_AS(add_(zeros({4}), ones({2, 4})),
                       "add_: operand float32 [2, 4] cannot be broadcast to the target's shape [4] (in-place ops keep "
                       "the target's shape)",
                       Error);
  CHECK_THROWS_WITH_AS(mul_(zeros({2, 3}), ones({2})),
                       doctest::Contains("mul_: operand float32 [2] cannot be broadcast"), Error);
  CHECK_THROWS_WITH_AS(add_(expand(zeros({1, 3}), {2, 3}), ones({3})),
                       "add_: target float32 [2, 3] has overlapping (expanded) elements", Error);
  CHECK_THROWS_WITH_AS(add_(zeros({2}), zeros({2}, {.dtype = kFloat64})),
                       "add_: dtype mismatch, float32 [2] and float64 [2]", Error);
  Tensor i = zeros({2}, {.dtype = kInt64});
  CHECK_THROWS_WITH_AS(div_(i, i),
                       "div_: expected a floating tensor (float32, float64, bfloat16, float16), got int64 [2]", Error);
  CHECK_THROWS_WITH_AS(addcdiv_(i, i, i),
                       "addcdiv_: expected a floating tensor (float32, float64, bfloat16, float16), got int64 [2]",
                       Error);
  CHECK_THROWS_WITH_AS(add_(i, i, 0.5), doctest::Contains("add_: scalar 0.5 does not fit the integer tensor"), Error);
  CHECK_THROWS_WITH_AS(sqrt_(i),
                       "sqrt_: expected a floating tensor (float32, float64, bfloat16, float16), got int64 [2]", Error);
  CHECK_THROWS_WITH_AS(clamp_(zeros({2}), 1, 0), "clamp_: min 1 is greater than max 0", Error);
  CHECK_THROWS_WITH_AS(masked_fill_(zeros({2}), ones({2}), 0.0),
                       "masked_fill_: mask must be a bool tensor, got float32 [2]", Error);
  CHECK_THROWS_WITH_AS(masked_fill_(zeros({2}), to(ones({3, 2}), kBool), 0.0),
                       "masked_fill_: mask bool [3, 2] cannot be broadcast to the target's shape [2]", Error);
}
