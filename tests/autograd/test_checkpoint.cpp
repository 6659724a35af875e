// tests/autograd/test_checkpoint.cpp — ks::checkpoint: same values and
// gradients as the plain function (dropout included, by the replayed
// generator), parameters inside reached by backward() and grad(), second
// derivatives through it, and the generator's stream after it unchanged.
#include "support/testing.h"

using namespace ks;
using namespace ks::testing;

TEST_CASE("checkpoint gives the plain function's gradients, dropout masks included") {
  Tensor w = leaf64({4, 4}, 41);
  auto block = [&](const std::vector<Tensor>& in) {
    Tensor h = dropout(tanh(matmul(in[0], w)), 0.5, true);
    return std::vector<Tensor>{mul(h, in[1]), sum(h)};
  };
  auto run = [&](bool checkpointed) {
    Tensor x = leaf64({3, 4}, 42), s = leaf64({3, 4}, 43);
    w.set_grad(Tensor());
    manual_seed(5);
    std::vector<Tensor> out = checkpointed ? checkpoint(block, {x, s}) : block({x, s});
    Tensor loss = add(sum(mul(out[0], out[0])), out[1]);
    const uint64_t offset_after_forward = default_generator().offset();
    backward(loss);
    CHECK(default_generator().offset() == offset_after_forward);  // the replay left the stream where it was
    return std::vector<std::vector<double>>{
        {loss.item()}, x.grad().to_vector<double>(), s.grad().to_vector<double>(), w.grad().to_vector<double>()};
  };
  auto plain = run(false), checkpointed = run(true);
  for (size_t i = 0; i < plain.size(); ++i) CHECK(plain[i] == checkpointed[i]);
}

TEST_CASE("checkpoint: a constant input, grad mode off, and a recomputation that differs") {
  Tensor w = leaf64({2}, 44);
  Tensor constant = tensor({1.0, 2.0}, {2}, {.dtype = kFloat64});
  auto f = [&](const std::vector<Tensor>& in) { return std::vector<Tensor>{mul(in[0], w)}; };
  backward(sum(checkpoint(f, {constant})[0]));  // only the parameter inside needs a gradient
  check_close(w.grad(), {1.0, 2.0});
  {
    NoGradGuard no_grad;
    CHECK_FALSE(checkpoint(f, {constant})[0].requires_grad());
  }
  int calls = 0;
  auto flaky = [&](const std::vector<Tensor>& in) {
    return ++calls == 1 ? std::vector<Tensor>{mul(in[0], w)} : std::vector<Tensor>{mul(in[0], w), in[0]};
  };
  CHECK_THROWS_WITH_AS(backward(sum(checkpoint(flaky, {constant})[0])), doctest::Contains("recomputation returned 2"),
                       Error);
}

TEST_CASE("checkpoint: grad() reaches the parameters inside without touching .grad, and hooks fire once") {
  Tensor w = leaf64({4, 4}, 45);
  auto block = [&](const std::vector<Tensor>& in) { return std::vector<Tensor>{tanh(matmul(in[0], w))}; };
  Tensor x = leaf64({3, 4}, 46);
  int hook_calls = 0;
  HookHandle handle = w.register_hook([&](const Tensor& g) {
    ++hook_calls;
    return g;
  });
  const std::vector<Tensor> plain = grad({sum(block({x})[0])}, {x, w});
  const std::vector<Tensor> through = grad({sum(checkpoint(block, {x})[0])}, {x, w});
  CHECK(hook_calls == 2);  // once per walk
  CHECK_FALSE(w.grad().defined());
  for (size_t i = 0; i < 2; ++i) CHECK(plain[i].to_vector<double>() == through[i].to_vector<double>());
  handle.remove();
}

TEST_CASE("checkpoint: second derivatives through it equal the plain function's (create_graph)") {
  Tensor w = leaf64({3, 3}, 47);
  auto block = [&](const std::vector<Tensor>& in) { return std::vector<Tensor>{tanh(matmul(in[0], w))}; };
  auto hessian_vector = [&](bool checkpointed) {
    Tensor x = leaf64({2, 3}, 48);
    Tensor y = sum(checkpointed ? checkpoint(block, {x})[0] : block({x})[0]);
    const std::vector<Tensor> g = grad({y}, {x, w}, {}, {.create_graph = true});
    // d/d(x, w) of Σ (g_x + g_w · 1): a mixed and a pure second derivative.
    Tensor z = add(sum(g[0]), sum(g[1]));
    const std::vector<Tensor> h = grad({z}, {x, w});
    return std::vector<std::vector<double>>{h[0].to_vector<double>(), h[1].to_vector<double>()};
  };
  const auto plain = hessian_vector(false), through = hessian_vector(true);
  for (size_t i = 0; i < 2; ++i)
    for (size_t j = 0; j < plain[i].size(); ++j) CHECK(through[i][j] == doctest::Approx(plain[i][j]).epsilon(1e-12));
}
