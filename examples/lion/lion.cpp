// examples/lion/lion.cpp — a Keystone plugin (liblion.so) adding the optimizer
// "lion": Lion (Chen et al., 2023, "Symbolic Discovery of Optimization
// Algorithms"), per parameter p with gradient g and one moment m,
//
//   c  = β1·m + (1 − β1)·g
//   p ← p − lr·(sign(c) + λ·p)        (decoupled weight decay λ, as AdamW's)
//   m  = β2·m + (1 − β2)·g
//
// in the config as {"optimizer": {"type": "lion", "lr": 3e-4, "beta1": 0.9,
// "beta2": 0.99, "weight_decay": 0.1}}. Lion's step is the sign, so its lr is
// a few times smaller than AdamW's and its weight decay a few times larger.
// The update is written with Keystone's tensor ops, so it runs on every
// device and dtype the ops do; the moment is a state slot ("exp_avg"), so it
// is saved in checkpoints and a resumed run goes on exactly.
//
// Load it with `keystone train --plugin liblion.so` (tests/check_examples.sh
// trains and resumes a run with it). Not here: the plugin mechanism
// (models/plugin.h), the registry (nn/optim/optimizer_kind.h).
#include "keystone.h"
#include "models/plugin.h"
#include "nn/optim/optimizer_kind.h"
#include "ops/compare.h"
#include "ops/inplace.h"

KS_PLUGIN("lion");

namespace {

using ks::Tensor;

class Lion final : public ks::nn::Optimizer {
 public:
  Lion(std::vector<ks::nn::ParamGroup> groups, double lr, double weight_decay, double beta1, double beta2)
      : Optimizer(std::move(groups), lr, weight_decay, {"exp_avg"}), beta1_(beta1), beta2_(beta2) {}

 private:
  void update(const Tensor& p, const Tensor& g, std::vector<Tensor>& state, const ks::nn::ParamGroup& group,
              int64_t) override {
    Tensor& m = state[0];
    const Tensor c = ks::add(ks::mul(m, beta1_), ks::mul(g, 1 - beta1_));
    // sign(c) as (c > 0) − (c < 0), in the parameter's dtype.
    const Tensor sign = ks::sub(ks::to(ks::gt(c, 0.0), p.dtype()), ks::to(ks::lt(c, 0.0), p.dtype()));
    if (group.weight_decay != 0) ks::mul_(p, 1 - group.lr * group.weight_decay);
    ks::sub_(p, sign, group.lr);
    ks::mul_(m, beta2_);
    ks::add_(m, g, 1 - beta2_);
  }
  double beta1_, beta2_;
};

// The keys of "lion" beside type, lr and weight_decay.
struct LionConfig : ks::nn::OptimizerOptions {
  double beta1 = 0.9, beta2 = 0.99;

  static LionConfig parse(ks::nn::JsonSection& s) {
    LionConfig o;
    o.beta1 = s.get_in("beta1", o.beta1, 0.0, 0.999999);
    o.beta2 = s.get_in("beta2", o.beta2, 0.0, 0.999999999);
    return o;
  }
  static std::vector<ks::KeyDoc> keys() {
    return {{"beta1", "lion: the weight of the moment in the step's sign"}, {"beta2", "lion: the moment's decay"}};
  }
  nlohmann::json to_json() const override { return {{"beta1", beta1}, {"beta2", beta2}}; }
};

std::unique_ptr<ks::nn::Optimizer> make_lion(std::vector<ks::nn::ParamGroup> groups, double lr, double wd,
                                             const LionConfig& o) {
  return std::make_unique<Lion>(std::move(groups), lr, wd, o.beta1, o.beta2);
}

}  // namespace

// weight_decay's default for "lion": 0.1 (decoupled, as the paper trains).
KS_REGISTER_OPTIMIZER("lion", ks::nn::optimizer_kind<LionConfig, make_lion>(0.1));
