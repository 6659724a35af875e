// tests/autograd/test_engine.cpp — the backward engine: diamonds,
// accumulation, retain_graph, no_grad, the in-place check, custom Functions.
#include "support/testing.h"

using namespace ks;
using namespace ks::testing;

TEST_CASE("diamond graph sums both paths") {
  Tensor x = tensor({2.0}, {}, {.dtype = kFloat64, .requires_grad = true});
  Tensor a = x * 3.0;    // da/dx = 3
  Tensor b = x * x;      // db/dx = 2x
  Tensor y = a * b;      // y = 3x^3, dy/dx = 9x^2 = 36
  backward(y);
  CHECK(x.grad().item() == doctest::Approx(36));
}

TEST_CASE("gradients accumulate across backward calls until reset") {
  Tensor w = tensor({1, 2}, {2}, {.dtype = kFloat64, .requires_grad = true});
  backward(sum(w * 2.0));
  backward(sum(w * 3.0));
  check_close(w.grad(), {5, 5});
  w.set_grad(Tensor());
  backward(sum(w));
  check_close(w.grad(), {1, 1});
  CHECK_FALSE(w.grad().requires_grad());  // .grad never carries a graph
}

TEST_CASE("retain_graph allows a second backward, otherwise it is an error") {
  Tensor x = tensor({1.5}, {}, {.dtype = kFloat64, .requires_grad = true});
  Tensor y = x * x;
  backward(y, Tensor(), /*retain_graph=*/true);
  backward(y);
  CHECK(x.grad().item() == doctest::Approx(6.0));
  Tensor z = x * x;
  backward(z);
  CHECK_THROWS_WITH_AS(backward(z), doctest::Contains("backward through the graph a second time"), Error);
}

TEST_CASE("no_grad and detach cut history") {
  Tensor x = ones({2}, {.requires_grad = true});
  {
    NoGradGuard g;
    Tensor y = x * 2.0;
    CHECK_FALSE(y.requires_grad());
  }
  CHECK((x * 2.0).requires_grad());
  Tensor d = detach(x * 2.0);
  CHECK_FALSE(d.requires_grad());
  CHECK_THROWS_WITH_AS(backward(sum(d)), doctest::Contains("does not require grad"), Error);
}

TEST_CASE("modifying a saved tensor in place is caught at backward") {
  Tensor w = ones({3}, {.requires_grad = true});
  Tensor a = full({3}, 2.0);
  Tensor y = sum(w * a);  // MulBackward saved a
  fill_(a, 5.0);
  CHECK_THROWS_WITH_AS(backward(y), doctest::Contains("modified by an in-place operation"), Error);
}

TEST_CASE("non-scalar roots need an explicit gradient") {
  Tensor x = ones({2}, {.requires_grad = true});
  CHECK_THROWS_WITH_AS(backward(x * 2.0), doctest::Contains("pass its gradient explicitly"), Error);
  backward(x * 2.0, tensor({1, 10}));
  check_close(x.grad(), {2, 20});
}

struct Cube : Function<Cube> {
  static Tensor forward(AutogradContext& ctx, const Tensor& x) {
    ctx.save_for_backward({x});
    return mul(mul(x, x), x);
  }
  static std::vector<Tensor> backward(AutogradContext& ctx, const std::vector<Tensor>& grad) {
    Tensor x = ctx.saved()[0];
    return {mul(grad[0], mul(mul(x, x), 3.0))};
  }
};

TEST_CASE("a custom Function is differentiable and gradchecks") {
  Tensor x = leaf64({3}, 5);
  Tensor y = Cube::apply(x);
  CHECK(y.requires_grad());
  CHECK_GRADCHECK([](const std::vector<Tensor>& a) { return Cube::apply(a[0]); }, {x});
}

TEST_CASE("gradcheck reports the worst element of a wrong backward") {
  struct Wrong : Function<Wrong> {
    static Tensor forward(AutogradContext&, const Tensor& x) { return mul(x, 2.0); }
    static std::vector<Tensor> backward(AutogradContext&, const std::vector<Tensor>& g) { return {mul(g[0], 3.0)}; }
  };
  Tensor x = leaf64({2}, 6);
  auto r = gradcheck([](const std::vector<Tensor>& a) { return Wrong::apply(a[0]); }, {x});
  CHECK_FALSE(r.ok);
  CHECK(r.message.find("analytical 3") != std::string::npos);
  CHECK(r.message.find("numerical 2") != std::string::npos);
}
