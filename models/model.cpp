// models/model.cpp — the model registry.
#include "models/model.h"

#include <map>

namespace ks::models {
namespace {
std::map<std::string, ModelFactory>& registry() {
  static std::map<std::string, ModelFactory> r;
  return r;
}
}  // namespace

bool register_model(const std::string& name, ModelFactory factory) {
  registry()[name] = factory;
  return true;
}

std::shared_ptr<Model> build_model(const ModelConfig& cfg) {
  auto it = registry().find(cfg.model);
  KS_CHECK(it != registry().end(), "build_model: no model named '", cfg.model, "' is built into this Keystone");
  return it->second(cfg);
}

}  // namespace ks::models
