// nn/optim/adam.cpp — the "adamw" and "adam" optimizers' descriptors: the
// keys they share (beta1, beta2, eps) and how the config builds nn::AdamW
// (decoupled weight decay, the default type) and nn::Adam (L2 added to the
// gradient). The updates are nn/optim.h's.
#include "nn/optim/optimizer_kind.h"

namespace ks::nn {
namespace {

struct AdamConfig : OptimizerOptions {
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  std::string state_dtype = "float32";  // or "bf16": the moments of float32 weights (nn/optim.h)

  static AdamConfig parse(JsonSection& s) {
    AdamConfig o;
    o.beta1 = s.get_in("beta1", o.beta1, 0.0, 0.999999);
    o.beta2 = s.get_in("beta2", o.beta2, 0.0, 0.999999999);
    o.eps = s.get<double>("eps", o.eps);
    KS_CHECK(o.eps > 0, "config: optimizer.eps: must be positive, got ", o.eps);
    o.state_dtype = s.get<std::string>("state_dtype", o.state_dtype);
    KS_CHECK(o.state_dtype == "float32" || o.state_dtype == "bf16", "config: optimizer.state_dtype: expected ",
             "float32 or bf16, got \"", o.state_dtype, "\"");
    return o;
  }
  static std::vector<KeyDoc> keys() {
    return {{"beta1", "adam(w): the first moment's decay"},
            {"beta2", "adam(w): the second moment's decay"},
            {"eps", "adam(w): added to the second moment's root"},
            {"state_dtype",
             "adam(w): the moments of float32 weights, float32 or bf16 (half the bytes, rounded stochastically)"}};
  }
  nlohmann::json to_json() const override {
    nlohmann::json j = {{"beta1", beta1}, {"beta2", beta2}, {"eps", eps}};
    if (state_dtype != "float32") j["state_dtype"] = state_dtype;  // older runs' config.json stay as they were
    return j;
  }
  AdamOptions options(double lr, double weight_decay) const {
    return {.lr = lr,
            .beta1 = beta1,
            .beta2 = beta2,
            .eps = eps,
            .weight_decay = weight_decay,
            .state_dtype = state_dtype == "bf16" ? DType::BFloat16 : DType::Float32};
  }
};

std::unique_ptr<Optimizer> make_adamw(std::vector<ParamGroup> groups, double lr, double wd, const AdamConfig& o) {
  return std::make_unique<AdamW>(std::move(groups), o.options(lr, wd));
}
std::unique_ptr<Optimizer> make_adam(std::vector<ParamGroup> groups, double lr, double wd, const AdamConfig& o) {
  return std::make_unique<Adam>(std::move(groups), o.options(lr, wd));
}

}  // namespace

KS_REGISTER_OPTIMIZER("adamw", optimizer_kind<AdamConfig, make_adamw>(0.01), 0);
KS_REGISTER_OPTIMIZER("adam", optimizer_kind<AdamConfig, make_adam>(0.0), 1);

}  // namespace ks::nn
