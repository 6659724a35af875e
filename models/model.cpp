// models/model.cpp — the model registry, and the default training loss.
#include "models/model.h"

#include <map>

#include "core/plugin_loader.h"
#include "ops/loss.h"

namespace ks::models {
namespace {
std::map<std::string, ModelFactory>& registry() {
  static std::map<std::string, ModelFactory> r;
  return r;
}
}  // namespace

Tensor Model::loss(const Batch& batch) {
  const Predictions p = predict(batch);
  return cross_entropy(p.logits, p.targets, {.ignore_index = p.ignore_index});
}

bool register_model(const std::string& name, ModelFactory factory) {
  if (!plugin_may_register("model kind", name, registry().count(name) > 0)) return false;
  registry()[name] = factory;
  return true;
}

std::shared_ptr<Model> build_model(const ModelConfig& cfg) {
  auto it = registry().find(cfg.model);
  KS_CHECK(it != registry().end(), "build_model: no model named '", cfg.model, "' is built into this Keystone");
  return it->second(cfg);
}

}  // namespace ks::models
