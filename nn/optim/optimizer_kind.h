// nn/optim/optimizer_kind.h — optimizers as descriptors: the config's
// `optimizer` section, `{"type": "adamw", "lr": 3e-4, "beta2": 0.98}`, names
// one by its type, and the descriptor reads its own keys, documents them and
// builds the optimizer. Each built-in one registers itself from its own file
// (nn/optim/sgd.cpp, nn/optim/adam.cpp), a plugin's from the plugin
// (KS_REGISTER_OPTIMIZER), so a new optimizer edits no shared file.
//
// Every type shares `lr` and `weight_decay` (whose default the type sets:
// AdamW's decoupled decay 0.01, L2 0 for the others); the rest is its own.
// Not here: the update rules (nn/optim.h: the Optimizer base, SGD, Adam,
// AdamW), the learning rate over the run (nn/lr_schedule.h).
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/registry.h"
#include "nn/json_section.h"
#include "nn/optim.h"

namespace ks::nn {

// One type's own options (SGD's momentum, Adam's betas), defined beside it.
class OptimizerOptions {
 public:
  virtual ~OptimizerOptions() = default;
  // Its keys, explicit, as the config's optimizer section holds them.
  virtual nlohmann::json to_json() const = 0;
};

struct OptimizerKind {
  double weight_decay = 0;  // the default of optimizer.weight_decay for this type
  // Its own keys (beyond type, lr and weight_decay) with their meanings.
  std::vector<KeyDoc> (*keys)() = nullptr;
  // Reads its keys from the optimizer section (the other keys are read
  // already): errors name "config: optimizer.<key>".
  std::shared_ptr<const OptimizerOptions> (*parse)(JsonSection& section) = nullptr;
  // The optimizer over `groups`; `options` is what parse returned (null: its defaults).
  std::unique_ptr<Optimizer> (*make)(std::vector<ParamGroup> groups, double lr, double weight_decay,
                                     const OptimizerOptions* options) = nullptr;
};

// `order` places it where `optimizer.type`'s doc and errors list the types.
bool register_optimizer(const std::string& type, OptimizerKind kind, int order = 0);
// Every type, in listing order ("adamw", "adam", "sgd", then a plugin's).
std::vector<std::string> optimizer_types();

// The config's optimizer section, resolved.
struct OptimizerConfig {
  std::string type = "adamw";
  double lr = 1e-3;
  double weight_decay = 0.01;  // adamw: decoupled; the others: L2. Never on biases and norms (decay_groups).
  std::shared_ptr<const OptimizerOptions> options;  // the type's own keys; null: its defaults

  // Every key, explicit: what a run folder's config.json holds.
  nlohmann::json to_json() const;
  // The optimizer over `model`'s parameters (nn/optim.h decay_groups).
  std::unique_ptr<Optimizer> make(const Module& model) const;
};
// Reads an optimizer section strictly ("config: optimizer.type: expected
// adamw, adam or sgd, got 'x'"; "config: optimizer.beta1: unknown key for
// optimizer 'sgd'").
OptimizerConfig parse_optimizer_config(const nlohmann::json& section);
// Every key an optimizer section may hold with its meaning: type, lr,
// weight_decay, then each type's own (a key two types share, once).
std::vector<KeyDoc> optimizer_config_keys();

// A type's descriptor from its options type and its factory: Options is
// default constructible (the defaults), derives from OptimizerOptions, and
// has static `Options parse(JsonSection&)` and `std::vector<KeyDoc> keys()`;
// Make is `std::unique_ptr<Optimizer> (std::vector<ParamGroup>, double lr,
// double weight_decay, const Options&)`.
template <class Options, auto Make> OptimizerKind optimizer_kind(double default_weight_decay) {
  return {default_weight_decay, &Options::keys,
          [](JsonSection& s) -> std::shared_ptr<const OptimizerOptions> {
            return std::make_shared<const Options>(Options::parse(s));
          },
          [](std::vector<ParamGroup> groups, double lr, double wd,
             const OptimizerOptions* options) -> std::unique_ptr<Optimizer> {
            static const Options defaults{};
            const Options* typed = options ? dynamic_cast<const Options*>(options) : &defaults;
            KS_CHECK(typed, "internal error: optimizer options of another type");
            return Make(std::move(groups), lr, wd, *typed);
          }};
}

}  // namespace ks::nn

#define KS_REGISTER_OPTIMIZER(type, ...) \
  static const bool KS_CONCAT(ks_optimizer_registered_, __LINE__) = ::ks::nn::register_optimizer(type, __VA_ARGS__)
