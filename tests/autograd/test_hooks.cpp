// tests/autograd/test_hooks.cpp — post-accumulate gradient hooks: once per
// backward with the whole gradient, in the engine's order, not for unused
// leaves, removable, and errors that name the problem.
#include "autograd/hooks.h"
#include "support/testing.h"

using namespace ks;
using namespace ks::testing;

TEST_CASE("a post-accumulate hook runs once per backward, after every use of the leaf has been summed") {
  Tensor w = tensor({1, 2}, {2}, {.dtype = kFloat64, .requires_grad = true});
  std::vector<std::vector<double>> seen;
  register_post_accumulate_grad_hook(w, [&](const Tensor& leaf) {
    CHECK(leaf.is_same(w));
    CHECK_FALSE(GradMode::is_enabled());
    seen.push_back(leaf.grad().to_vector<double>());
  });
  backward(sum(w * 2.0) + sum(w * w));  // two uses: d/dw = 2 + 2w
  REQUIRE(seen.size() == 1);
  CHECK(seen[0] == std::vector<double>{4, 6});
  backward(sum(w * 3.0));  // .grad accumulates; the hook sees the running total
  REQUIRE(seen.size() == 2);
  CHECK(seen[1] == std::vector<double>{7, 9});
}

TEST_CASE("hooks run in the engine's order: the leaf used last is complete first") {
  Tensor a = tensor({1.0}, {}, {.dtype = kFloat64, .requires_grad = true});
  Tensor b = tensor({2.0}, {}, {.dtype = kFloat64, .requires_grad = true});
  Tensor c = tensor({3.0}, {}, {.dtype = kFloat64, .requires_grad = true});
  std::string order;
  register_post_accumulate_grad_hook(a, [&](const Tensor&) { order += "a"; });
  register_post_accumulate_grad_hook(b, [&](const Tensor&) { order += "b"; });
  register_post_accumulate_grad_hook(c, [&](const Tensor&) { order += "c"; });
  Tensor h1 = a * 2.0;  // a layer stack: a first, c last
  Tensor h2 = h1 * b;
  Tensor h3 = h2 * c;
  backward(h3);
  CHECK(order == "cba");
}

TEST_CASE("a leaf without a gradient in this backward is not called, nor are removed hooks are not called") {
  Tensor used = tensor({1.0}, {}, {.requires_grad = true});
  Tensor unused = tensor({1.0}, {}, {.requires_grad = true});
  int calls_used = 0, calls_unused = 0, calls_second = 0;
  HookHandle h = register_post_accumulate_grad_hook(used, [&](const Tensor&) { ++calls_used; });
  register_post_accumulate_grad_hook(used, [&](const Tensor&) { ++calls_second; });
  register_post_accumulate_grad_hook(unused, [&](const Tensor&) { ++calls_unused; });
  backward(used * 2.0);
  CHECK(calls_used == 1);
  CHECK(calls_second == 1);
  CHECK(calls_unused == 0);
  h.remove();
  h.remove();  // twice is harmless
  backward(used * 2.0);
  CHECK(calls_used == 1);
  CHECK(calls_second == 2);
}

TEST_CASE("a hook's exception propagates from backward, and non-leaves are refused") {
  Tensor w = tensor({1.0}, {}, {.requires_grad = true});
  register_post_accumulate_grad_hook(w, [](const Tensor&) { throw Error("hook says no"); });
  CHECK_THROWS_WITH_AS(backward(w * 2.0), doctest::Contains("hook says no"), Error);
  Tensor y = w * 2.0;
  CHECK_THROWS_WITH_AS(register_post_accumulate_grad_hook(y, [](const Tensor&) {}),
                       doctest::Contains("must be a leaf that requires grad"), Error);
  Tensor plain = tensor({1.0}, {});
  CHECK_THROWS_WITH_AS(register_post_accumulate_grad_hook(plain, [](const Tensor&) {}),
                       doctest::Contains("must be a leaf that requires grad"), Error);
}
