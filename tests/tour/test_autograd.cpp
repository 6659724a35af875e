// tests/tour/test_autograd.cpp — the snippets of docs/tour/02_autograd.md
// (the graph an op leaves, the engine's walk, gradients that meet, a saved
// tensor changed in place), compiled and run; the chapter quotes the regions
// between "[tour NAME begin]" and "[tour NAME end]" word for word.
// Not the engine's tests (tests/autograd/).
#include "support/testing.h"

using namespace ks;

TEST_CASE("the graph a forward leaves behind") {
  // [tour graph begin]
  Tensor a = tensor({2.0, -3.0}).set_requires_grad(true);  // leaves: (2,)
  Tensor b = tensor({4.0, 5.0}).set_requires_grad(true);
  Tensor y = sum(mul(a, b));  // () = a·b

  CHECK(y.grad_fn()->name() == "SumBackward");
  const Node& mul_node = *y.grad_fn()->next_edges[0].node;
  CHECK(mul_node.name() == "MulBackward");
  CHECK(mul_node.next_edges[0].node->name() == "AccumulateGrad");  // -> a.grad

  backward(y);  // dy/da = b, dy/db = a
  CHECK(a.grad().to_vector<float>() == std::vector<float>{4, 5});
  CHECK(b.grad().to_vector<float>() == std::vector<float>{2, -3});
  // [tour graph end]
}

TEST_CASE("gradients that meet are summed") {
  // [tour meet begin]
  Tensor x = tensor({3.0}).set_requires_grad(true);
  Tensor y = add(mul(x, x), x);  // x² + x: x is used three times
  backward(y);
  CHECK(x.grad().item() == 7.0);  // 2x + 1 at x = 3

  backward(add(mul(x, x), x));  // .grad accumulates across backward calls
  CHECK(x.grad().item() == 14.0);
  x.set_grad(Tensor());  // what an optimizer's zero_grad does
  // [tour meet end]
}

TEST_CASE("a saved tensor changed in place is caught") {
  // [tour version begin]
  Tensor x = tensor({1.0, 2.0}).set_requires_grad(true);
  Tensor e = exp(x);  // ExpBackward saves its output e
  Tensor y = sum(mul(e, e));
  {
    NoGradGuard no_grad;
    mul_(e, 2.0);  // e's version moves on
  }
  CHECK_THROWS_WITH_AS(backward(y), doctest::Contains("modified by an in-place operation"), Error);
  // [tour version end]
}
