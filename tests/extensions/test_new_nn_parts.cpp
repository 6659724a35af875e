// tests/extensions/test_new_nn_parts.cpp — adding an optimizer, a learning-rate
// schedule or an activation is this one file: Lion (Chen et al. 2023,
// "Symbolic Discovery of Optimization Algorithms"), a step-decay schedule and
// a squaring activation register themselves here, and the config reads,
// documents, checks and builds them like the built-in ones, with no shared
// file edited (issue 52's acceptance). Not the built-in ones' arithmetic
// (tests/nn/test_optim.cpp, tests/nn/test_activation.cpp).
#include "support/testing.h"

#include <cmath>

#include "nn/feed_forward.h"
#include "nn/lr_schedule.h"
#include "nn/optim/optimizer_kind.h"
#include "ops/elementwise.h"
#include "ops/view.h"

using namespace ks;
using namespace ks::testing;

namespace {

// Lion: c = β1·m + (1 − β1)·g; p −= lr·(sign(c) + λ·p); m = β2·m + (1 − β2)·g.
struct LionHyper {
  double beta1, beta2;
};
class Lion final : public nn::Optimizer {
 public:
  Lion(std::vector<nn::ParamGroup> groups, double lr, double weight_decay, LionHyper h)
      : Optimizer(std::move(groups), lr, weight_decay, {"exp_avg"}), h_(h) {}

 private:
  void update(const Tensor& p, const Tensor& grad, std::vector<Tensor>& state, const nn::ParamGroup& group,
              int64_t) override {
    KS_CHECK(p.dtype() == kFloat32 && p.is_contiguous(), "this test's Lion takes contiguous float32 parameters");
    float* w = p.data<float>();
    float* m = state[0].data<float>();
    const Tensor g32 = contiguous(grad);
    const float* g = g32.data<float>();
    for (int64_t i = 0; i < p.numel(); ++i) {
      const double c = h_.beta1 * m[i] + (1 - h_.beta1) * g[i];
      const double sign = c > 0 ? 1.0 : c < 0 ? -1.0 : 0.0;
      w[i] = float(w[i] - group.lr * (sign + group.weight_decay * w[i]));
      m[i] = float(h_.beta2 * m[i] + (1 - h_.beta2) * g[i]);
    }
  }
  LionHyper h_;
};

struct LionConfig : nn::OptimizerOptions {
  double beta1 = 0.9, beta2 = 0.99;
  static LionConfig parse(nn::JsonSection& s) {
    LionConfig o;
    o.beta1 = s.get_in("beta1", o.beta1, 0.0, 0.999999);
    o.beta2 = s.get_in("beta2", o.beta2, 0.0, 0.999999999);
    return o;
  }
  static std::vector<KeyDoc> keys() {
    return {{"beta1", "adam(w): the first moment's decay"}, {"beta2", "adam(w): the second moment's decay"}};
  }
  nlohmann::json to_json() const override { return {{"beta1", beta1}, {"beta2", beta2}}; }
};

std::unique_ptr<nn::Optimizer> make_lion(std::vector<nn::ParamGroup> groups, double lr, double wd,
                                         const LionConfig& o) {
  return std::make_unique<Lion>(std::move(groups), lr, wd, LionHyper{o.beta1, o.beta2});
}

KS_REGISTER_OPTIMIZER("test_lion", nn::optimizer_kind<LionConfig, make_lion>(0.1), 10);

// Step decay: the rate halves every quarter of the run.
double step_factor(const nn::LRSchedule& s, int64_t step) {
  const int64_t quarter = std::max<int64_t>(s.total_steps / 4, 1);
  return std::pow(0.5, double((std::max<int64_t>(step, 1) - 1) / quarter));
}
KS_REGISTER_SCHEDULE("test_step", nn::ScheduleKind{.factor = step_factor, .decays = true}, 10);

Tensor square(const Tensor& x) { return mul(x, x); }
KS_REGISTER_ACTIVATION("test_square", nn::ActivationKind{square}, 10);

struct Linear1 : nn::Module {
  Tensor w = register_parameter("w", from_vector<float>({0.5f, -1.0f, 0.0f}));
};

}  // namespace

TEST_CASE("an optimizer registered in its own file is read, documented, checked and built by the config") {
  const std::vector<std::string> types = nn::optimizer_types();
  CHECK(types == std::vector<std::string>{"adamw", "adam", "sgd", "test_lion"});

  nn::OptimizerConfig c = nn::parse_optimizer_config({{"type", "test_lion"}, {"lr", 0.1}, {"beta2", 0.5}});
  CHECK(c.type == "test_lion");
  CHECK(c.weight_decay == 0.1);  // the type's own default
  CHECK(c.to_json() ==
        nlohmann::json{{"type", "test_lion"}, {"lr", 0.1}, {"weight_decay", 0.1}, {"beta1", 0.9}, {"beta2", 0.5}});
  // Its keys go through the strict reader: a key it does not read is refused by name.
  CHECK_THROWS_WITH_AS(nn::parse_optimizer_config({{"type", "test_lion"}, {"eps", 1e-8}}),
                       "config: optimizer.eps: unknown key for optimizer 'test_lion'", Error);
  CHECK_THROWS_WITH_AS(nn::parse_optimizer_config({{"type", "lion"}}),
                       "config: optimizer.type: expected adamw, adam, sgd or test_lion, got 'lion'", Error);
  bool documented = false;
  for (const KeyDoc& k : nn::optimizer_config_keys())
    if (k.key == "type") documented = k.doc == "adamw | adam | sgd | test_lion";
  CHECK(documented);

  // Built over a module: w is a weight of one dimension, so decay_groups gives it no decay.
  Linear1 model;
  std::unique_ptr<nn::Optimizer> opt = c.make(model);
  model.w.set_grad(from_vector<float>({2.0f, 3.0f, -1.0f}));
  opt->step();
  // m = 0: c = 0.1·g, sign(c) = sign(g); w −= 0.1·sign(g).
  check_close(model.w, {0.4, -1.1, 0.1}, 1e-6);
  CHECK(opt->slot_names() == std::vector<std::string>{"exp_avg"});
}

TEST_CASE("a learning-rate schedule registered in its own file is checked and run like the built-in ones") {
  CHECK(nn::schedule_types() == std::vector<std::string>{"constant", "cosine", "linear", "noam", "test_step"});
  nn::LRSchedule s{.type = "test_step", .total_steps = 100};
  s.validate();
  CHECK(s.decays());
  CHECK(s.factor(1) == 1.0);
  CHECK(s.factor(25) == 1.0);
  CHECK(s.factor(26) == 0.5);
  CHECK(s.factor(100) == 0.125);
  CHECK_THROWS_WITH_AS((nn::LRSchedule{.type = "test_step", .warmup_steps = 100, .total_steps = 100}.validate()),
                       "lr schedule: total_steps (100) must exceed warmup_steps (100)", Error);
  CHECK_THROWS_WITH_AS(nn::check_schedule_type("step"),
                       "lr schedule: unknown kind 'step' (expected constant, cosine, linear, noam or test_step)",
                       Error);
}

TEST_CASE("an activation registered in its own file is a name the feed-forward blocks take") {
  CHECK(nn::activation_names() == std::vector<std::string>{"gelu", "relu", "gelu_tanh", "test_square"});
  CHECK(nn::parse_activation("test_square") == "test_square");
  CHECK_THROWS_WITH_AS(nn::parse_activation("swish"),
                       "unknown activation 'swish' (expected gelu, relu, gelu_tanh or test_square)", Error);
  Tensor x = from_vector<float>({-2.0f, 0.5f, 3.0f});
  check_close(nn::activate("test_square", x), {4.0, 0.25, 9.0}, 1e-6);
  // In an mlp block: fc2(act(fc1(x))) with act = x².
  std::shared_ptr<nn::FeedForward> ff =
      nn::make_feed_forward("mlp", {.d_model = 3, .d_ff = 4, .activation = "test_square", .bias = false});
  Tensor y = ff->forward(from_vector<float>({1.0f, -1.0f, 2.0f}, {1, 3}));
  CHECK(y.sizes() == std::vector<int64_t>{1, 3});
}
