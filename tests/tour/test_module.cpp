// tests/tour/test_module.cpp — the snippets of docs/tour/04_module.md (a
// module of our own: registered parameters, dotted names, train/eval, a
// state dict round trip), compiled and run; the chapter quotes the regions
// between "[tour NAME begin]" and "[tour NAME end]" word for word.
// Not the module tests (tests/nn/).
#include "nn/layers.h"
#include "nn/module.h"
#include "support/testing.h"

using namespace ks;

// [tour mlp begin]
// A two-layer perceptron: x (N, in) -> (N, out).
struct Mlp : nn::Module {
  std::shared_ptr<nn::Linear> fc1, fc2;
  std::shared_ptr<nn::Dropout> drop;
  Mlp(int64_t in, int64_t hidden, int64_t out) : Module("Mlp") {
    fc1 = register_module("fc1", std::make_shared<nn::Linear>(in, hidden));
    fc2 = register_module("fc2", std::make_shared<nn::Linear>(hidden, out));
    drop = register_module("drop", std::make_shared<nn::Dropout>(0.5));
  }
  Tensor forward(const Tensor& x) const {   // (N, in)
    Tensor h = relu(fc1->forward(x));       // (N, hidden)
    return fc2->forward(drop->forward(h));  // (N, out)
  }
};
// [tour mlp end]

TEST_CASE("a module's parameters have dotted names") {
  // [tour names begin]
  manual_seed(0);
  Mlp net(4, 8, 3);
  std::vector<std::string> names;
  for (const auto& [name, p] : net.named_parameters()) names.push_back(name);
  CHECK(names == std::vector<std::string>{"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"});
  CHECK(net.num_parameters() == 4 * 8 + 8 + 8 * 3 + 3);
  // [tour names end]
}

TEST_CASE("train and eval, and a state dict round trip") {
  // [tour state begin]
  manual_seed(0);
  Mlp a(4, 8, 3), b(4, 8, 3);  // different random weights
  Tensor x = randn({2, 4});    // (N, in)

  a.eval();  // dropout off: the output is a function of the weights alone
  b.eval();
  b.load_state_dict(a.state_dict());  // copied by name, shapes checked
  CHECK(a.forward(x).to_vector<float>() == b.forward(x).to_vector<float>());

  a.train();  // dropout on again: two forwards now differ
  CHECK(a.forward(x).to_vector<float>() != a.forward(x).to_vector<float>());
  // [tour state end]
}
