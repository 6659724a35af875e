// tests/autograd/test_tensor_hooks.cpp — Tensor::register_hook (leaf and
// non-leaf, replacing the gradient, removal) and retain_grad.
#include "support/testing.h"

using namespace ks;
using namespace ks::testing;

TEST_CASE("a hook on a non-leaf sees its whole gradient and may replace it") {
  Tensor x = tensor({1.0, 2.0}, {2}, {.dtype = kFloat64, .requires_grad = true});
  Tensor h = mul(x, 3.0);
  std::vector<double> seen;
  HookHandle handle = h.register_hook([&](const Tensor& g) {
    seen = g.to_vector<double>();
    return mul(g, 10.0);  // replaces the gradient flowing on to x
  });
  Tensor y = add(sum(h), sum(mul(h, h)));  // two uses: the hook sees their sum, 1 + 2h
  backward(y);
  CHECK(seen == std::vector<double>{7.0, 13.0});
  check_close(x.grad(), {210.0, 390.0});  // 3 · 10 · (1 + 2h)

  handle.remove();
  handle.remove();  // twice is harmless
  x.set_grad(Tensor());
  Tensor h2 = mul(x, 3.0);
  backward(sum(h2));
  check_close(x.grad(), {3.0, 3.0});
}

TEST_CASE("a hook on a leaf runs before accumulation, and an undefined return keeps the gradient") {
  Tensor w = tensor({1.0, 1.0}, {2}, {.dtype = kFloat64, .requires_grad = true});
  int calls = 0;
  HookHandle clip = w.register_hook([&](const Tensor& g) { return clamp(g, -1.0, 1.0); });
  HookHandle count = w.register_hook([&](const Tensor&) {
    ++calls;
    return Tensor();
  });
  backward(sum(mul(w, tensor({5.0, -0.5}, {2}, {.dtype = kFloat64}))));
  check_close(w.grad(), {1.0, -0.5});
  CHECK(calls == 1);
  clip.remove();
  backward(sum(mul(w, 4.0)));
  check_close(w.grad(), {5.0, 3.5});
  CHECK(calls == 2);
  count.remove();

  HookHandle bad = w.register_hook([](const Tensor&) { return zeros({3}, {.dtype = kFloat64}); });
  CHECK_THROWS_WITH_AS(backward(sum(w)), doctest::Contains("same shape"), Error);
  bad.remove();
  Tensor constant = zeros({2});
  CHECK_THROWS_WITH_AS(constant.register_hook([](const Tensor& g) { return g; }),
                       doctest::Contains("does not require grad"), Error);
}

TEST_CASE("retain_grad keeps a non-leaf gradient, accumulating like a leaf's") {
  Tensor x = tensor({1.0, -1.0}, {2}, {.dtype = kFloat64, .requires_grad = true});
  Tensor h = mul(x, 2.0);
  h.retain_grad();
  h.retain_grad();  // once is enough
  Tensor y = sum(mul(h, h));
  backward(y, Tensor(), /*retain_graph=*/true);
  check_close(h.grad(), {4.0, -4.0});  // 2h
  backward(y);
  check_close(h.grad(), {8.0, -8.0});
  CHECK_FALSE(h.grad().requires_grad());
  Tensor leaf = ones({1}, {.requires_grad = true});
  leaf.retain_grad();  // a no-op on a leaf
  Tensor unretained = mul(x, 1.0);
  backward(sum(unretained));
  CHECK_FALSE(unretained.grad().defined());
}

TEST_CASE("hooks run in grad() too, on the gradient it returns") {
  Tensor x = tensor({2.0}, {1}, {.dtype = kFloat64, .requires_grad = true});
  Tensor h = mul(x, x);
  HookHandle handle = h.register_hook([](const Tensor& g) { return mul(g, 0.5); });
  check_close(grad({sum(h)}, {h})[0], {0.5});
  check_close(grad({sum(mul(h, 1.0))}, {x})[0], {2.0});  // 0.5 · 2x
  handle.remove();
  HookHandle on_leaf = x.register_hook([](const Tensor& g) { return mul(g, 3.0); });
  check_close(grad({sum(mul(x, x))}, {x})[0], {12.0});  // 3 · 2x: a leaf's hooks run on what grad() returns
  CHECK_FALSE(x.grad().defined());
  on_leaf.remove();
}
