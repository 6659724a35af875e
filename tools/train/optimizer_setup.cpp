// tools/train/optimizer_setup.cpp — builds the optimizer a config names (see the header).
#include "tools/train/optimizer_setup.h"

namespace ks::tools {

std::unique_ptr<nn::Optimizer> make_optimizer(const OptimizerConfig& o, const nn::Module& model) {
  auto groups = nn::decay_groups(model, o.weight_decay);
  if (o.kind == OptimizerKind::SGD)
    return std::make_unique<nn::SGD>(
        groups,
        nn::SGDOptions{.lr = o.lr, .momentum = o.momentum, .weight_decay = o.weight_decay, .nesterov = o.nesterov});
  nn::AdamOptions a{.lr = o.lr, .beta1 = o.beta1, .beta2 = o.beta2, .eps = o.eps, .weight_decay = o.weight_decay};
  if (o.kind == OptimizerKind::Adam) return std::make_unique<nn::Adam>(groups, a);
  return std::make_unique<nn::AdamW>(groups, a);
}

}  // namespace ks::tools
