// models/kind.cpp — the registry of model kinds (models/kind.h).
#include "models/kind.h"

#include "core/registry.h"

namespace ks::models {
namespace {
Registry<ModelKind>& registry() {
  static Registry<ModelKind> r("model kind");
  return r;
}
}  // namespace

bool register_model(ModelKind kind) {
  KS_CHECK(!kind.name.empty() && !kind.task.empty() && kind.make, "register_model: a model kind needs a name ('",
           kind.name, "'), a task ('", kind.task, "') and a factory");
  for (const KeyDoc& k : kind.keys)
    KS_CHECK(is_model_field(k.key), "register_model: model kind '", kind.name, "' lists key '", k.key,
             "', which is no ModelConfig field; a kind's own keys go into its options (with_model_options)");
  const std::string name = kind.name;
  return registry().add(name, std::move(kind));
}

const ModelKind* find_model_kind(const std::string& name) { return registry().find(name); }

const ModelKind& model_kind(const std::string& name, const std::string& prefix) {
  if (const ModelKind* kind = find_model_kind(name)) return *kind;
  const std::vector<std::string> known = model_kinds();
  const std::string near = nearest_key(name, known);
  throw Error(str("config: ", prefix, "model: unknown model '", name.substr(0, 64), "' (expected ",
                  listed(known, " or "), near.empty() ? std::string() : str("; did you mean ", near, "?"),
                  "); a plugin's model kind is known once the plugin is loaded: keystone train --plugin FILE, "
                  "or the config's \"plugins\" list"));
}

std::vector<std::string> model_kinds() { return registry().names(); }

std::string default_model_for_task(const std::string& task) {
  for (const auto& [name, kind] : registry())
    if (kind.task == task && kind.task_default) return name;
  return "";
}

}  // namespace ks::models
