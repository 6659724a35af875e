// tests/ops/test_half_elementwise.cpp — bfloat16 and float16 through the CPU's
// elementwise kernels (unary, binary, scalar, in-place, compare, where,
// masked_fill, and their gradients): each result is the float32 op on the
// widened operands, rounded once to the 16-bit type (checked bit for bit),
// and within the format's rounding of a float64 reference.
// Not here: the row families (reductions, softmax, norms, losses), the
// promotion rules (test_type_promotion.cpp), CUDA (tests/cuda/test_half.cpp).
#include <cmath>
#include <functional>
#include <string>

#include "autograd/engine.h"
#include "autograd/node.h"
#include "ops/compare.h"
#include "ops/elementwise.h"
#include "ops/inplace.h"
#include "ops/unary.h"
#include "ops/view.h"
#include "support/testing.h"
#include "unary_rows.h"

using namespace ks;
using namespace ks::testing;

namespace {

// y (16-bit) equals the float32 computation `f32` rounded once to y's dtype, bit for bit.
void check_rounded_once(const Tensor& y, const Tensor& f32) {
  REQUIRE(y.dtype() != kFloat32);
  // Widening a 16-bit value to float is exact and one-to-one, so equal floats are equal bits.
  const std::vector<float> got = y.to_vector<float>();
  const std::vector<float> want = to(f32, y.dtype()).to_vector<float>();
  CHECK(got == want);
}

// y within the format's rounding of a float64 reference: one rounding of the
// result plus float32's own error (relative), and an absolute floor for results near 0.
void check_near_reference(const Tensor& y, const Tensor& ref64) {
  const double u = unit_roundoff(y.dtype());
  check_close(to(y, kFloat64), ref64, 1e-3 * u, 1.01 * u + 1e-6);
}

}  // namespace

TEST_CASE("every unary op on bfloat16 and float16 is float32's, rounded once") {
  for (DType d : kHalfTypes) {
    for (const UnaryCase& c : unary_cases()) {
      const std::string op_name = c.node;
      CAPTURE(d);
      CAPTURE(op_name);
      // Long enough to split across threads; the transposed view takes the strided loop.
      Tensor x = half_leaf(d, {2, 9000}, 61, c.lo, c.hi);
      Tensor y = c.op(x);
      CHECK(y.dtype() == d);
      check_rounded_once(y, c.op(to(x, kFloat32)));
      check_near_reference(y, c.op(to(x, kFloat64)));
      Tensor t = transpose(half_leaf(d, {3, 41}, 62, c.lo, c.hi), 0, 1);
      check_rounded_once(c.op(t), c.op(to(t, kFloat32)));
    }
  }
}

TEST_CASE("binary and scalar ops on 16-bit tensors compute in float32 and keep the dtype") {
  for (DType d : kHalfTypes) {
    CAPTURE(d);
    Tensor a = half_leaf(d, {3, 4}, 63, -2, 2), b = half_leaf(d, {4}, 64, 0.5, 2);  // b broadcasts
    Tensor a32 = to(a, kFloat32), b32 = to(b, kFloat32);
    using Binary = std::function<Tensor(const Tensor&, const Tensor&)>;
    const Binary ops[] = {[](const Tensor& p, const Tensor& q) { return add(p, q); },
                          [](const Tensor& p, const Tensor& q) { return sub(p, q); },
                          [](const Tensor& p, const Tensor& q) { return mul(p, q); },
                          [](const Tensor& p, const Tensor& q) { return div(p, q); }};
    for (const Binary& op : ops) {
      Tensor y = op(a, b);
      CHECK(y.dtype() == d);
      check_rounded_once(y, op(a32, b32));
    }
    check_rounded_once(maximum(a, b), maximum(a32, b32));
    check_rounded_once(pow(b, a), pow(b32, a32));
    // A scalar stays in float32 (PyTorch's opmath): bf16 1.0 + 1.001 is round(2.001) = 2.
    check_rounded_once(add(a, 1.001), add(a32, 1.001));
    check_rounded_once(mul(0.3, a), mul(0.3, a32));
    check_rounded_once(div(1.0, b), div(1.0, b32));
  }
  Tensor one = to(tensor({1.0}, {1}), kBFloat16);
  CHECK(to(add(one, 1.001), kFloat64).item() == 2.0);
}

TEST_CASE("comparisons on 16-bit tensors, and the scalar rounded to the tensor's dtype first") {
  for (DType d : kHalfTypes) {
    CAPTURE(d);
    Tensor a = half_leaf(d, {5, 3}, 65, -1, 1), b = half_leaf(d, {5, 3}, 66, -1, 1);
    CHECK(lt(a, b).to_vector<bool>() == lt(to(a, kFloat32), to(b, kFloat32)).to_vector<bool>());
    CHECK(eq(a, a).to_vector<bool>() == std::vector<bool>(15, true));
    CHECK(ge(a, 0.25).to_vector<bool>() == ge(to(a, kFloat32), 0.25).to_vector<bool>());
  }
  // PyTorch 1.13: torch.tensor([1.], dtype=torch.bfloat16) == 1.001 is True (the
  // scalar rounds to 1.0 in bfloat16), < 1.001 is False; float16 == 1.0001 is True.
  Tensor one = to(tensor({1.0}, {1}), kBFloat16);
  CHECK(eq(one, 1.001).to_vector<bool>() == std::vector<bool>{true});
  CHECK(lt(one, 1.001).to_vector<bool>() == std::vector<bool>{false});
  CHECK(eq(to(tensor({1.0}, {1}), kFloat16), 1.0001).to_vector<bool>() == std::vector<bool>{true});
  CHECK(eq(tensor({1.0}, {1}), 1.001).to_vector<bool>() == std::vector<bool>{false});  // float32 keeps 1.001
}

TEST_CASE("where, masked_fill and in-place updates on 16-bit tensors") {
  for (DType d : kHalfTypes) {
    CAPTURE(d);
    Tensor a = half_leaf(d, {4, 3}, 67, -1, 1), b = half_leaf(d, {4, 3}, 68, -1, 1);
    Tensor cond = gt(a, b);
    Tensor w = where(cond, a, b);
    CHECK(w.dtype() == d);
    check_rounded_once(w, maximum(to(a, kFloat32), to(b, kFloat32)));
    Tensor m = masked_fill(a, cond, 0.3);
    check_rounded_once(m, masked_fill(to(a, kFloat32), cond, 0.3));

    Tensor t = clone(a);
    Tensor t32 = to(a, kFloat32);
    add_(t, b, 0.5);
    add_(t32, to(b, kFloat32), 0.5);
    check_rounded_once(t, t32);
    mul_(t, 3.0);
    check_rounded_once(t, mul(to(to(t32, d), kFloat32), 3.0));
  }
}

TEST_CASE("gradients of a 16-bit graph come back in 16 bits, each step float32's rounded once") {
  for (DType d : kHalfTypes) {
    CAPTURE(d);
    Tensor x = half_leaf(d, {6, 5}, 69, -2, 2).set_requires_grad(true);
    Tensor y = half_leaf(d, {6, 5}, 70, 0.5, 1.5).set_requires_grad(true);
    Tensor g = half_leaf(d, {6, 5}, 71, -1, 1);
    backward(mul(tanh(x), y), g);
    REQUIRE(x.grad().defined());
    CHECK(x.grad().dtype() == d);
    CHECK(y.grad().dtype() == d);
    // The graph's 16-bit intermediates, rebuilt in float32: tanh's output is
    // saved rounded, so near |tanh| = 1 the gradient 1 - s^2 inherits its
    // rounding, as in PyTorch; each step must round once, no more.
    auto r = [d](const Tensor& t) { return to(to(t, d), kFloat32); };
    const Tensor x32 = to(x, kFloat32), y32 = to(y, kFloat32), g32 = to(g, kFloat32);
    const Tensor s = r(tanh(x32));
    check_rounded_once(y.grad(), mul(g32, s));
    check_rounded_once(x.grad(), mul(r(mul(g32, y32)), sub(1.0, mul(s, s))));
  }
}

TEST_CASE("an op that takes no bool tensor says so, naming the 16-bit types it takes") {
  CHECK_THROWS_WITH_AS(exp(zeros({2}, {.dtype = kBool})),
                       "exp: expected a floating tensor (float32, float64, bfloat16, float16), got bool [2]", Error);
}
