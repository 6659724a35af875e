// tests/autograd/test_function_outputs.cpp — ks::Function with several
// outputs, outputs without gradients, and the names errors give a Function.
#include "support/testing.h"

using namespace ks;
using namespace ks::testing;

namespace {
// (x·y, x + y): two outputs, one gradient each.
struct MulAdd : Function<MulAdd> {
  static std::vector<Tensor> forward(AutogradContext& ctx, const Tensor& x, const Tensor& y) {
    ctx.save_for_backward({x, y});
    return {mul(x, y), add(x, y)};
  }
  static std::vector<Tensor> backward(AutogradContext& ctx, const std::vector<Tensor>& g) {
    auto s = ctx.saved();
    Tensor gx, gy;
    auto acc = [](Tensor& into, const Tensor& v) { into = into.defined() ? add(into, v) : v; };
    if (g[0].defined()) {
      acc(gx, mul(g[0], s[1]));
      acc(gy, mul(g[0], s[0]));
    }
    if (g[1].defined()) {
      acc(gx, g[1]);
      acc(gy, g[1]);
    }
    return {gx, gy};
  }
};

// The largest value of each row and where it is: the index gets no gradient.
struct RowMax : Function<RowMax> {
  static std::vector<Tensor> forward(AutogradContext& ctx, const Tensor& x) {
    ValuesIndices r = max(x, 1, true);
    ctx.save_for_backward({r.indices});
    ctx.saved_data["shape"] = x.sizes();
    ctx.mark_non_differentiable({r.indices});
    return {r.values, r.indices};
  }
  static std::vector<Tensor> backward(AutogradContext& ctx, const std::vector<Tensor>& g) {
    CHECK_FALSE(g[1].defined());  // the index output never gets a gradient
    Tensor gx = zeros(std::any_cast<Shape>(ctx.saved_data["shape"]), {.dtype = g[0].dtype()});
    return {scatter_add(gx, 1, ctx.saved()[0], g[0])};
  }
};
}  // namespace

TEST_CASE("a multi-output Function: one gradient per output, undefined where none came") {
  Tensor x = leaf64({3}, 21), y = leaf64({3}, 22);
  auto out = MulAdd::apply(x, y);
  REQUIRE(out.size() == 2);
  CHECK(out[0].requires_grad());
  CHECK(out[1].requires_grad());
  CHECK_GRADCHECK(
      [](const std::vector<Tensor>& v) {
        auto o = MulAdd::apply(v[0], v[1]);
        return std::vector<Tensor>{o[0], o[1]};
      },
      {x, y});
  // Only the second output used: backward gets an undefined first gradient.
  backward(sum(MulAdd::apply(x, y)[1]));
  check_close(x.grad(), {1, 1, 1});
  // Its backward is written in ops, so it differentiates twice.
  CHECK_GRADGRADCHECK(
      [](const std::vector<Tensor>& v) {
        auto o = MulAdd::apply(v[0], v[1]);
        return mul(o[0], o[1]);
      },
      {x, y});
}

TEST_CASE("mark_non_differentiable: an integer output carries no gradient") {
  Tensor x = leaf64({2, 3}, 23);
  auto out = RowMax::apply(x);
  CHECK(out[0].requires_grad());
  CHECK_FALSE(out[1].requires_grad());
  CHECK(out[1].dtype() == kInt64);
  CHECK_GRADCHECK([](const std::vector<Tensor>& v) { return RowMax::apply(v[0])[0]; }, {x});
}

namespace {
struct BadShape : Function<BadShape> {
  static Tensor forward(AutogradContext&, const Tensor& x) { return mul(x, 2.0); }
  static std::vector<Tensor> backward(AutogradContext&, const std::vector<Tensor>&) {
    return {zeros({4}, {.dtype = kFloat64})};
  }
};
struct Named : Function<Named> {
  static constexpr const char* name = "MyRmsNorm";
  static Tensor forward(AutogradContext&, const Tensor& x) { return mul(x, 2.0); }
  static std::vector<Tensor> backward(AutogradContext&, const std::vector<Tensor>& g) { return {g[0]}; }
};
template <class T> struct Templated : Function<Templated<T>> {
  static Tensor forward(AutogradContext&, const Tensor& x) { return mul(x, 2.0); }
  static std::vector<Tensor> backward(AutogradContext&, const std::vector<Tensor>& g) { return {g[0]}; }
};
}  // namespace

TEST_CASE("errors name a Function by its readable type, or by its name member") {
  Tensor x = leaf64({3}, 24);
  CHECK_THROWS_WITH_AS(backward(sum(BadShape::apply(x))),
                       doctest::Contains("(anonymous namespace)::BadShape returned a gradient of shape [4]"), Error);
  CHECK(x.grad_fn() == nullptr);
  CHECK(Templated<float>::apply(x).grad_fn()->name() == "(anonymous namespace)::Templated<float>");
  CHECK(Named::apply(x).grad_fn()->name() == "MyRmsNorm");
}
