// nn/optim/optimizer_kind.cpp — the optimizer registry and the config's
// optimizer section read through it (nn/optim/optimizer_kind.h).
#include "nn/optim/optimizer_kind.h"

namespace ks::nn {
namespace {

Registry<OptimizerKind>& registry() {
  static Registry<OptimizerKind> r("optimizer");
  return r;
}

// The keys of every type ("type" lists the registered ones).
std::vector<KeyDoc> shared_keys() {
  return {{"type", joined(optimizer_types(), " | ")},
          {"lr", "the peak learning rate"},
          {"weight_decay", "adamw: decoupled; adam, sgd: L2 (never on biases and norms)"}};
}

}  // namespace

bool register_optimizer(const std::string& type, OptimizerKind kind, int order) {
  KS_CHECK(kind.keys && kind.parse && kind.make, "register_optimizer: optimizer '", type,
           "' needs keys, parse and make");
  return registry().add(type, std::move(kind), order);
}

std::vector<std::string> optimizer_types() { return registry().names(); }

std::vector<KeyDoc> optimizer_config_keys() {
  std::vector<KeyDoc> out = shared_keys();
  for (const std::string& type : optimizer_types())
    for (const KeyDoc& k : registry().at(type).keys()) {
      bool seen = false;
      for (const KeyDoc& o : out) seen = seen || o.key == k.key;
      if (!seen) out.push_back(k);
    }
  return out;
}

OptimizerConfig parse_optimizer_config(const nlohmann::json& j) {
  JsonSection s(j, "optimizer", shared_keys());
  OptimizerConfig o;
  o.type = s.get<std::string>("type", o.type);
  const OptimizerKind* kind = registry().find(o.type);
  KS_CHECK(kind, "config: optimizer.type: expected ", listed(optimizer_types(), " or "), ", got '", o.type, "'");
  o.lr = s.get<double>("lr", o.lr);
  KS_CHECK(o.lr > 0, "config: optimizer.lr: must be positive, got ", o.lr);
  o.weight_decay = s.get_in("weight_decay", kind->weight_decay, 0.0, 1e3);
  s.allow(kind->keys());
  o.options = kind->parse(s);
  s.finish(str(" for optimizer '", o.type, "'"));
  return o;
}

nlohmann::json OptimizerConfig::to_json() const {
  nlohmann::json j;
  if (options) {
    j = options->to_json();
  } else {  // the type's defaults, as its parser gives them for an empty section
    const OptimizerKind& kind = registry().at(type);
    const nlohmann::json empty = nlohmann::json::object();
    JsonSection s(empty, "optimizer", kind.keys());
    j = kind.parse(s)->to_json();
  }
  j["type"] = type;
  j["lr"] = lr;
  j["weight_decay"] = weight_decay;
  return j;
}

std::unique_ptr<Optimizer> OptimizerConfig::make(const Module& model) const {
  return registry().at(type).make(decay_groups(model, weight_decay), lr, weight_decay, options.get());
}

}  // namespace ks::nn
