// tools/train/optimizer_setup.h — the "optimizer" section of a training config
// made into an optimizer over a model's parameters: AdamW, Adam or SGD, with
// weight decay on the weights only (nn::decay_groups leaves biases and norms
// out). The section's keys and their checks are run_config.h's; this file only
// builds. The trainer and `keystone info`'s memory measurement both call it, so
// the measured step holds the state the trained one holds.
#pragma once

#include <memory>

#include "nn/module.h"
#include "nn/optim.h"
#include "tools/train/run_config.h"

namespace ks::tools {

std::unique_ptr<nn::Optimizer> make_optimizer(const OptimizerConfig& config, const nn::Module& model);

}  // namespace ks::tools
