// nn/optim/sgd.cpp — the "sgd" optimizer's descriptor: its keys (momentum,
// nesterov) and how the config builds nn::SGD (nn/optim.h holds the update).
#include "nn/optim/optimizer_kind.h"

namespace ks::nn {
namespace {

struct SgdConfig : OptimizerOptions {
  double momentum = 0.9;
  bool nesterov = false;

  static SgdConfig parse(JsonSection& s) {
    SgdConfig o;
    o.momentum = s.get_in("momentum", o.momentum, 0.0, 1.0);
    o.nesterov = s.get<bool>("nesterov", o.nesterov);
    return o;
  }
  static std::vector<KeyDoc> keys() { return {{"momentum", "sgd: momentum"}, {"nesterov", "sgd: Nesterov momentum"}}; }
  nlohmann::json to_json() const override { return {{"momentum", momentum}, {"nesterov", nesterov}}; }
};

std::unique_ptr<Optimizer> make_sgd(std::vector<ParamGroup> groups, double lr, double weight_decay,
                                    const SgdConfig& o) {
  return std::make_unique<SGD>(
      std::move(groups),
      SGDOptions{.lr = lr, .momentum = o.momentum, .weight_decay = weight_decay, .nesterov = o.nesterov});
}

}  // namespace

KS_REGISTER_OPTIMIZER("sgd", optimizer_kind<SgdConfig, make_sgd>(0.0), 2);

}  // namespace ks::nn
