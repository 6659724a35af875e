// tests/autograd/test_engine.cpp — the backward engine: diamonds,
// accumulation, retain_graph, no_grad, the in-place check, custom Functions.
#include "support/testing.h"

using namespace ks;
using namespace ks::testing;

TEST_CASE("diamond graph sums both paths") {
  Tensor x = tensor({2.0}, {}, {.dtype = kFloat64, .requires_grad = true});
  Tensor a = x * 3.0;  // da/dx = 3
  Tensor b = x * x;    // db/dx = 2x
  Tensor y = a * b;    // y = 3x^3, dy/dx = 9x^2 = 36
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

namespace {
// Custom Functions whose backward hands the leaf a gradient of a chosen kind;
// `made` keeps what backward made (or a handle to it, when it must stay shared).
Tensor g_made;
const void* g_made_data = nullptr;
enum class GradKind { Fresh, Shared, ViewOfLarger, Transposed };
GradKind g_kind = GradKind::Fresh;

struct Emit : Function<Emit> {
  static Tensor forward(AutogradContext&, const Tensor& x) { return mul(x, 2.0); }
  static std::vector<Tensor> backward(AutogradContext&, const std::vector<Tensor>& g) {
    const int64_t n = g[0].numel();
    Tensor out;
    switch (g_kind) {
      case GradKind::Fresh: out = mul(g[0], 2.0); break;
      case GradKind::Shared: out = g_made = mul(g[0], 2.0); break;
      case GradKind::ViewOfLarger: out = narrow(cat({mul(g[0], 2.0), g[0]}, 0), 0, 0, n); break;
      case GradKind::Transposed: out = transpose(contiguous(transpose(mul(g[0], 2.0), 0, 1)), 0, 1); break;
    }
    g_made_data = out.data_ptr();
    return {out};
  }
};

// Backward of Emit's output (all ones) into a fresh leaf x of `shape`.
Tensor leaf_after_backward(GradKind kind, const Shape& shape) {
  g_kind = kind;
  g_made = Tensor();
  Tensor x = zeros(shape, {.dtype = kFloat64, .requires_grad = true});
  backward(sum(Emit::apply(x)));
  return x;
}
}  // namespace

TEST_CASE("a leaf keeps an unshared gradient as its .grad and copies any other") {
  // Nothing else holds it: no copy.
  Tensor fresh = leaf_after_backward(GradKind::Fresh, {3});
  CHECK(fresh.grad().data_ptr() == g_made_data);
  check_close(fresh.grad(), {2, 2, 2});

  // Held elsewhere too: .grad is a copy, so updating it in place leaves the other holder alone.
  Tensor shared = leaf_after_backward(GradKind::Shared, {3});
  CHECK(shared.grad().data_ptr() != g_made.data_ptr());
  backward(sum(mul(shared, 1.0)));  // accumulates into .grad in place
  check_close(shared.grad(), {3, 3, 3});
  check_close(g_made, {2, 2, 2});

  // A view into a larger buffer is copied (adopting it would keep the whole buffer alive),
  // and so is a non-contiguous gradient (.grad is always contiguous).
  Tensor view = leaf_after_backward(GradKind::ViewOfLarger, {3});
  CHECK(view.grad().data_ptr() != g_made_data);
  check_close(view.grad(), {2, 2, 2});
  Tensor transposed = leaf_after_backward(GradKind::Transposed, {2, 3});
  CHECK(transposed.grad().data_ptr() != g_made_data);
  CHECK(transposed.grad().is_contiguous());
  check_close(transposed.grad(), {2, 2, 2, 2, 2, 2});

  // The caller's own gradient for a leaf root is the caller's: .grad is a copy of it.
  Tensor w = zeros({2}, {.dtype = kFloat64, .requires_grad = true});
  Tensor gw = tensor({1, 2}, {2}, {.dtype = kFloat64});
  backward(w, gw);
  CHECK(w.grad().data_ptr() != gw.data_ptr());
  backward(w, gw);
  check_close(gw, {1, 2});
  check_close(w.grad(), {2, 4});
}

TEST_CASE("gradients meeting at a node are summed in place only into a tensor nothing else holds") {
  for (bool shared_first : {true, false}) {
    CAPTURE(shared_first);
    g_kind = GradKind::Shared;
    g_made = Tensor();
    Tensor x = zeros({3}, {.dtype = kFloat64, .requires_grad = true});
    // Nodes run newest first, so the gradient made last in forward reaches x's buffer first.
    Tensor a, b;
    if (shared_first) {
      b = mul(x, 3.0);
      a = Emit::apply(x);  // its backward returns a gradient that g_made also holds
    } else {
      a = Emit::apply(x);
      b = mul(x, 3.0);
    }
    backward(sum(add(a, b)));
    check_close(x.grad(), {5, 5, 5});
    check_close(g_made, {2, 2, 2});  // never summed into
  }
}
