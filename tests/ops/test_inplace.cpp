// tests/ops/test_inplace.cpp — in-place updates: values against loops with
// broadcast operands and strided targets, version bumps, the no-history
// rules, overlap between operand and target, and errors.
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

}  // namespace

TEST_CASE("in-place arithmetic matches loops, operands broadcast to the target") {
  Tensor t = buf64({3, 4}, 91), o = buf64({4}, 92), p = buf64({3, 1}, 93, 0.5, 2.0);
  const Shape s{3, 4};
  check_update(t, ref_binary(t, o, s, [](double x, double y) { return x + y; }), [&](Tensor x) { return add_(x, o); });
  check_update(t, ref_binary(t, o, s, [](double x, double y) { return x + 0.3 * y; }),
               [&](Tensor x) { return add_(x, o, 0.3); });
  check_update(t, ref_binary(t, o, s, [](double x, double y) { return x - 2 * y; }),
               [&](Tensor x) { return sub_(x, o, 2.0); });
  check_update(t, ref_binary(t, p, s, [](double x, double y) { return x * y; }), [&](Tensor x) { return mul_(x, p); });
  check_update(t, ref_binary(t, p, s, [](double x, double y) { return x / y; }), [&](Tensor x) { return div_(x, p); });
  check_update(t, ref_unary(t, [](double x) { return x + 1.5; }), [](Tensor x) { return add_(x, 1.5); });
  check_update(t, ref_unary(t, [](double x) { return x - 1.5; }), [](Tensor x) { return sub_(x, 1.5); });
  check_update(t, ref_unary(t, [](double x) { return x * 0.9; }), [](Tensor x) { return mul_(x, 0.9); });
  check_update(t, ref_unary(t, [](double x) { return x / 4.0; }), [](Tensor x) { return div_(x, 4.0); });
  check_update(t, ref_ternary(t, o, p, s, [](double x, double a, double b) { return x - 0.1 * a * b; }),
               [&](Tensor x) { return addcmul_(x, o, p, -0.1); });
  check_update(t, ref_ternary(t, o, p, s, [](double x, double a, double b) { return x + 0.01 * a / b; }),
               [&](Tensor x) { return addcdiv_(x, o, p, 0.01); });
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
  // A permuted target and a sliced one: only their own elements change.
  Tensor base = buf64({4, 3}, 95);
  Tensor before = clone(base);
  Tensor t = transpose(base, 0, 1);  // (3, 4) view
  Tensor o = buf64({4}, 96);
  {
    NoGradGuard g;
    add_(t, o, 2.0);
  }
  check_close(t, ref_binary(transpose(before, 0, 1), o, {3, 4}, [](double x, double y) { return x + 2 * y; }), 1e-12);
  Tensor wide = buf64({2, 6}, 97);
  Tensor wide_before = clone(wide);
  mul_(slice(wide, 1, 0, 6, 2), 10.0);
  std::vector<double> w = wide_before.to_vector<double>();
  for (size_t i = 0; i < w.size(); ++i)
    if ((i % 6) % 2 == 0) w[i] *= 10;
  check_close(wide, w, 1e-12);
  // float32 addcdiv_ on a long row (the vectorised path), as Adam runs it.
  Tensor f = to(buf64({40001}, 98), kFloat32), a = to(buf64({40001}, 99), kFloat32),
         b = to(buf64({40001}, 100, 0.5, 1.0), kFloat32);
  std::vector<double> fe = ref_ternary(f, a, b, {40001}, [](double x, double y, double z) { return x - 1e-3 * y / z; });
  addcdiv_(f, a, b, -1e-3);
  check_close(f, fe, 1e-6, 1e-5);
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
  CHECK_THROWS_WITH_AS(div_(i, i), "div_: expected a float32 or float64 tensor, got int64 [2]", Error);
  CHECK_THROWS_WITH_AS(addcdiv_(i, i, i), "addcdiv_: expected a float32 or float64 tensor, got int64 [2]", Error);
  CHECK_THROWS_WITH_AS(add_(i, i, 0.5), doctest::Contains("add_: scalar 0.5 does not fit the integer tensor"), Error);
  CHECK_THROWS_WITH_AS(sqrt_(i), "sqrt_: expected a float32 or float64 tensor, got int64 [2]", Error);
  CHECK_THROWS_WITH_AS(clamp_(zeros({2}), 1, 0), "clamp_: min 1 is greater than max 0", Error);
  CHECK_THROWS_WITH_AS(masked_fill_(zeros({2}), ones({2}), 0.0),
                       "masked_fill_: mask must be a bool tensor, got float32 [2]", Error);
  CHECK_THROWS_WITH_AS(masked_fill_(zeros({2}), to(ones({3, 2}), kBool), 0.0),
                       "masked_fill_: mask bool [3, 2] cannot be broadcast to the target's shape [2]", Error);
}
