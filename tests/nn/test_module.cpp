// tests/nn/test_module.cpp — Module registration, dotted names, modes,
// placement and state-dict errors.
#include "support/testing.h"

#include "nn/module.h"

using namespace ks;

namespace {

struct Affine : nn::Module {
  Tensor weight, bias;
  explicit Affine(int64_t n) : Module("Affine") {
    weight = register_parameter("weight", ones({n}));
    bias = register_parameter("bias", zeros({n}));
    register_buffer("calls", zeros({1}, {.dtype = kInt64}));
  }
  Tensor forward(const Tensor& x) { return add(mul(x, weight), bias); }
};

struct Stack : nn::Module {
  std::shared_ptr<Affine> first, second;
  Stack() : Module("Stack") {
    first = register_module("first", std::make_shared<Affine>(3));
    second = register_module("second", std::make_shared<Affine>(3));
  }
};

}  // namespace

TEST_CASE("parameters get stable dotted names in registration order") {
  Stack s;
  std::vector<std::string> names;
  for (auto& [n, t] : s.named_parameters()) names.push_back(n);
  CHECK(names == std::vector<std::string>{"first.weight", "first.bias", "second.weight", "second.bias"});
  CHECK(s.num_parameters() == 12);
  CHECK(s.named_buffers().size() == 2);
  CHECK(s.state_dict().size() == 6);
  for (const Tensor& p : s.parameters()) CHECK(p.requires_grad());
  CHECK(s.to_string().find("(first): Affine(weight=[3], bias=[3])") != std::string::npos);
}

TEST_CASE("train/eval propagate, zero_grad clears") {
  Stack s;
  s.eval();
  CHECK_FALSE(s.first->is_training());
  s.train();
  CHECK(s.second->is_training());
  backward(sum(s.second->forward(s.first->forward(ones({3})))));
  CHECK(s.first->weight.grad().defined());
  s.zero_grad();
  CHECK_FALSE(s.first->weight.grad().defined());
}

TEST_CASE("EvalModeGuard gives back the caller's mode, also after a throw") {
  Stack s;
  for (bool was_training : {true, false}) {
    s.train(was_training);
    try {
      nn::EvalModeGuard eval_mode(s);
      CHECK_FALSE(s.first->is_training());
      throw Error("stop");
    } catch (const Error&) {
    }
    CHECK(s.is_training() == was_training);
    CHECK(s.second->is_training() == was_training);
  }
}

TEST_CASE("to(dtype) rebinds the layer's own handles in place") {
  Affine a(2);
  a.to(kFloat64);
  CHECK(a.weight.dtype() == kFloat64);
  CHECK(a.named_parameters()[0].second.dtype() == kFloat64);
  CHECK(a.named_buffers()[0].second.dtype() == kInt64);  // not floating: untouched
  CHECK(a.forward(ones({2}, {.dtype = kFloat64})).dtype() == kFloat64);
}

TEST_CASE("state dict round trip and its errors") {
  Stack a, b;
  {
    NoGradGuard g;
    fill_(a.first->weight, 3.0);
  }
  b.load_state_dict(a.state_dict());
  CHECK(b.first->weight.to_vector<float>() == std::vector<float>{3, 3, 3});

  nn::NamedTensors sd = a.state_dict();
  sd.erase(sd.begin());  // drop first.weight
  sd.emplace_back("extra.weight", zeros({1}));
  sd[0].second = zeros({4});  // first.bias has the wrong shape
  CHECK_THROWS_WITH_AS(b.load_state_dict(sd),
                       "load_state_dict(Stack): missing keys: first.weight; unexpected keys: extra.weight; "
                       "shape mismatch: first.bias (checkpoint [4], model [3])",
                       Error);
  sd.pop_back();
  sd[0].second = zeros({3});
  CHECK_THROWS_WITH_AS(b.load_state_dict(sd), "load_state_dict(Stack): missing keys: first.weight", Error);
}

TEST_CASE("registration rejects bad and duplicate names") {
  nn::Module m("M");
  m.register_parameter("w", zeros({1}));
  CHECK_THROWS_WITH_AS(m.register_parameter("w", zeros({1})), "M: name 'w' is already registered", Error);
  CHECK_THROWS_WITH_AS(m.register_buffer("a.b", zeros({1})), doctest::Contains("invalid name 'a.b'"), Error);
}
