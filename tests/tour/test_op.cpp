// tests/tour/test_op.cpp — the snippets of docs/tour/03_an_op.md: softmax
// end to end (the kernel found by device, the forward against the formula
// by hand, a fully masked row, gradcheck in float64), compiled and run; the
// chapter quotes the regions between "[tour NAME begin]" and "[tour NAME end]"
// word for word. Not softmax's own tests (tests/ops/test_softmax.cpp).
#include <limits>

#include "support/testing.h"

using namespace ks;

TEST_CASE("softmax's kernel is found by device") {
  // [tour table begin]
  CHECK(softmax_kernel.has(DeviceType::CPU));  // filled by ops/cpu/softmax.cpp
  Tensor y = softmax(randn({2, 3}), -1);       // -> softmax_kernel(Device::cpu(), ...)
  CHECK(y.sizes() == Shape{2, 3});
  // [tour table end]
}

TEST_CASE("softmax's forward is the formula, and a masked row is zeros") {
  // [tour forward begin]
  const double inf = std::numeric_limits<double>::infinity();
  Tensor x = tensor({1.0, 2.0, 3.0, -inf, -inf, -inf}, {2, 3}, {.dtype = kFloat64});  // (2, 3)
  std::vector<double> y = softmax(x, -1).to_vector<double>();

  // Row 0 by hand: subtract the max (3), exponentiate, divide by the sum.
  const double s = std::exp(1.0 - 3) + std::exp(2.0 - 3) + std::exp(0.0);
  CHECK(y[0] == doctest::Approx(std::exp(1.0 - 3) / s));
  CHECK(y[2] == doctest::Approx(1 / s));
  // Row 1 sees nothing (every entry -inf, as under a full mask): zeros, not NaN.
  CHECK(y[3] == 0.0);
  CHECK(y[5] == 0.0);
  // [tour forward end]
}

TEST_CASE("softmax's backward passes gradcheck") {
  // [tour gradcheck begin]
  Tensor x = randn({3, 5}, {.dtype = kFloat64}).set_requires_grad(true);  // float64: differences are exact enough
  Tensor w = randn({3, 5}, {.dtype = kFloat64});  // a weighted sum makes every output element matter
  GradcheckResult r = gradcheck([&](const std::vector<Tensor>& in) { return sum(mul(softmax(in[0], -1), w)); }, {x});
  CHECK_MESSAGE(r.ok, r.message);

  // And on a non-contiguous input: the kernel takes any strides.
  Tensor xt = transpose(randn({5, 3}, {.dtype = kFloat64}), 0, 1).set_requires_grad(true);  // (3, 5), strides (1, 3)
  CHECK_GRADCHECK([&](const std::vector<Tensor>& in) { return softmax(in[0], 0); }, {xt});
  // [tour gradcheck end]
}
