// tests/autograd/test_higher_order.cpp — ks::grad, create_graph and the
// error an op without higher-order support raises when differentiated twice.
#include "support/testing.h"

using namespace ks;
using namespace ks::testing;

TEST_CASE("grad returns gradients without touching .grad") {
  Tensor x = tensor({1.0, 2.0, 3.0}, {3}, {.dtype = kFloat64, .requires_grad = true});
  Tensor w = tensor({0.5}, {}, {.dtype = kFloat64, .requires_grad = true});
  Tensor y = sum(mul(mul(x, x), w));  // Σ w x²
  auto g = grad({y}, {x, w});
  check_close(g[0], {1.0, 2.0, 3.0});           // 2 w x
  CHECK(g[1].item() == doctest::Approx(14.0));  // Σ x²
  CHECK_FALSE(x.grad().defined());
  CHECK_FALSE(w.grad().defined());
  CHECK_FALSE(g[0].requires_grad());  // no create_graph: no history
}

TEST_CASE("grad with respect to an intermediate tensor, and unused inputs") {
  Tensor x = tensor({1.0, -2.0}, {2}, {.dtype = kFloat64, .requires_grad = true});
  Tensor h = mul(x, 3.0);
  Tensor y = sum(mul(h, h));
  check_close(grad({y}, {h})[0], {6.0, -12.0});  // 2h
  Tensor unused = tensor({1.0}, {1}, {.dtype = kFloat64, .requires_grad = true});
  CHECK_THROWS_WITH_AS(grad({sum(mul(x, 2.0))}, {unused}), doctest::Contains("was not used"), Error);
  auto g = grad({sum(mul(x, 2.0))}, {x, unused}, {}, {.allow_unused = true});
  check_close(g[0], {2.0, 2.0});
  CHECK_FALSE(g[1].defined());
  Tensor constant = tensor({1.0}, {1}, {.dtype = kFloat64});
  CHECK_THROWS_WITH_AS(grad({y}, {constant}), doctest::Contains("does not require grad"), Error);
}

TEST_CASE("grad reaches an input through a node discovered before the path that leads to it") {
  // y = a · exp(a) with a = 2x: the walk from y meets a first, then exp(a),
  // whose one edge leads back to a; exp(a) must run too (dy/dx = 2 e^a (1 + a)).
  Tensor x = tensor({0.5, -1.0}, {2}, {.dtype = kFloat64, .requires_grad = true});
  Tensor a = mul(x, 2.0);
  Tensor y = sum(mul(a, exp(a)));
  const Tensor g = grad({y}, {x})[0];
  for (int64_t i = 0; i < 2; ++i) {
    const double ai = 2 * x.data<double>()[i];
    CHECK(g.data<double>()[i] == doctest::Approx(2 * std::exp(ai) * (1 + ai)));
  }
}

TEST_CASE("create_graph: the gradient has a graph, and second derivatives are exact") {
  Tensor x = tensor({0.5, -1.5}, {2}, {.dtype = kFloat64, .requires_grad = true});
  Tensor y = sum(mul(mul(x, x), x));  // Σ x³
  Tensor gx = grad({y}, {x}, {}, {.create_graph = true})[0];
  CHECK(gx.requires_grad());
  check_close(gx, {0.75, 6.75});  // 3x²
  Tensor ggx = grad({sum(gx)}, {x})[0];
  check_close(ggx, {3.0, -9.0});  // 6x

  // backward(create_graph) leaves a .grad that can itself be differentiated.
  Tensor z = sum(div(mul(x, x), add(x, 3.0)));
  backward(z, Tensor(), false, true);
  Tensor gz = x.grad();
  CHECK(gz.requires_grad());
  x.set_grad(Tensor());
  backward(sum(gz));
  // d/dx [x²/(x+3)] = (x² + 6x)/(x+3)²; second derivative 18/(x+3)³
  check_close(x.grad(), {18.0 / std::pow(3.5, 3), 18.0 / std::pow(1.5, 3)}, 1e-12);
}

TEST_CASE("gradgradcheck passes on differentiable backwards and finds a wrong second derivative") {
  Tensor a = leaf64({2, 3}, 11), b = leaf64({3}, 12, 0.5, 1.5);
  CHECK_GRADGRADCHECK([](const std::vector<Tensor>& x) { return div(sub(mul(x[0], x[1]), x[1]), add(x[1], 1.0)); },
                      {a, b});
  CHECK_GRADGRADCHECK([](const std::vector<Tensor>& x) { return mean(mul(x[0], x[0]), {1}); }, {a});

  // The right first derivative, a wrong second: gradgradcheck names it.
  struct Square : Function<Square> {
    static Tensor forward(AutogradContext& ctx, const Tensor& x) {
      ctx.save_for_backward({x});
      return mul(x, x);
    }
    static std::vector<Tensor> backward(AutogradContext& ctx, const std::vector<Tensor>& g) {
      Tensor x = ctx.saved()[0];
      return {mul(g[0], add(detach(x), x))};  // 2x, but only half of it carries x's history
    }
  };
  Tensor x = leaf64({3}, 13);
  CHECK_GRADCHECK([](const std::vector<Tensor>& v) { return Square::apply(v[0]); }, {x});
  auto r = gradgradcheck([](const std::vector<Tensor>& v) { return Square::apply(v[0]); }, {x});
  CHECK_FALSE(r.ok);
  CHECK(r.message.find("gradcheck failed") != std::string::npos);

  // A create_graph restatement of a backward that is not the gradient, though
  // consistent with its own derivative: gradgradcheck compares it with the plain one.
  struct Restated : Function<Restated> {
    static Tensor forward(AutogradContext& ctx, const Tensor& x) {
      ctx.save_for_backward({x});
      return mul(x, x);
    }
    static std::vector<Tensor> backward(AutogradContext& ctx, const std::vector<Tensor>& g) {
      return {mul(g[0], mul(ctx.saved()[0], GradMode::is_enabled() ? 2.5 : 2.0))};
    }
  };
  CHECK_GRADCHECK([](const std::vector<Tensor>& v) { return Restated::apply(v[0]); }, {x});
  r = gradgradcheck([](const std::vector<Tensor>& v) { return Restated::apply(v[0]); }, {x});
  CHECK_FALSE(r.ok);
  CHECK(r.message.find("differs from the plain backward's") != std::string::npos);
}

namespace {
struct Kernelish : Function<Kernelish> {
  static constexpr const char* name = "Kernelish";
  static constexpr bool once_differentiable = true;
  static Tensor forward(AutogradContext& ctx, const Tensor& x) {
    ctx.save_for_backward({x});
    return mul(x, x);
  }
  static std::vector<Tensor> backward(AutogradContext& ctx, const std::vector<Tensor>& g) {
    NoGradGuard raw;  // stands for a kernel: no graph
    return {mul(g[0], mul(ctx.saved()[0], 2.0))};
  }
};
}  // namespace

TEST_CASE("an op without higher-order support names itself when differentiated twice") {
  Tensor x = leaf64({3}, 14);
  Tensor gx = grad({sum(Kernelish::apply(x))}, {x}, {}, {.create_graph = true})[0];
  CHECK(gx.requires_grad());  // never a silent constant
  CHECK_THROWS_WITH_AS(grad({sum(gx)}, {x}), doctest::Contains("Kernelish does not support higher-order gradients"),
                       Error);
  // A first-order gradient through it is still fine.
  check_close(grad({sum(Kernelish::apply(x))}, {x})[0], mul(x, 2.0).to_vector<double>());
}

TEST_CASE("a Hessian-vector product of a cubic equals the finite-difference HVP") {
  Tensor x = leaf64({4}, 15), v = leaf64({4}, 16);
  v.set_requires_grad(false);
  auto f = [](const Tensor& t) { return sum(mul(mul(t, t), add(t, 1.0))); };  // Σ x³ + x²
  Tensor gx = grad({f(x)}, {x}, {}, {.create_graph = true})[0];
  Tensor hv = grad({sum(mul(gx, v))}, {x})[0];
  // H = diag(6x + 2): H v elementwise.
  std::vector<double> xs = x.to_vector<double>(), vs = v.to_vector<double>(), expect;
  for (size_t i = 0; i < xs.size(); ++i) expect.push_back((6 * xs[i] + 2) * vs[i]);
  check_close(hv, expect, 1e-12);
}
