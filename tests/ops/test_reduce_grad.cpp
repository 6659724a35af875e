// tests/ops/test_reduce_grad.cpp — the reductions' backward pieces
// (ReduceGradOps), one or more rows each in tests/ops/reduce_grad_rows.h: the
// gradient at the piece's special points in both float dtypes, and gradchecks
// and gradgradchecks of its reduction over every layout and an expanded input.
// Not here: the reductions' values (test_sum.cpp, test_reduce_*.cpp).
#include "ops/ops_testing.h"
#include "reduce_grad_rows.h"

using namespace ks;
using namespace ks::testing;

TEST_CASE("every reduction backward piece gives the written-out gradient at its special points") {
  for (const ReduceGradCase& c : reduce_grad_cases()) {
    const std::string call = c.call;
    CAPTURE(call);
    for (DType dt : {kFloat64, kFloat32}) {
      CAPTURE(name(dt));
      Tensor x = to(from_vector(c.x, c.shape), dt).set_requires_grad(true);
      backward(sum(c.op(x)));
      REQUIRE(x.grad().defined());
      CHECK(x.grad().dtype() == dt);
      check_close(x.grad(), c.grad, dt == kFloat64 ? 1e-15 : 1e-7, dt == kFloat64 ? 1e-15 : 1e-6);
    }
  }
}

TEST_CASE("every reduction backward piece gradchecks and gradgradchecks over layouts and an expanded input") {
  using V = const std::vector<Tensor>&;
  for (const ReduceGradCase& c : reduce_grad_cases()) {
    const std::string call = c.call;
    CAPTURE(call);
    auto f = c.op;
    check_grads_over_layouts([f](V a) { return f(a[0]); }, {{3, 4, 5}}, 41, c.lo, c.hi);
    check_grads_expanded(f, {1, 4}, {3, 4}, 42, c.lo, c.hi);
  }
}
