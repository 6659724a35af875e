// models/kind.cpp — the registry of model kinds (models/kind.h).
#include "models/kind.h"

#include <map>

#include "core/plugin_loader.h"

namespace ks::models {
namespace {
std::map<std::string, ModelKind>& registry() {
  static std::map<std::string, ModelKind> r;
  return r;
}
}  // namespace

bool register_model(ModelKind kind) {
  KS_CHECK(!kind.name.empty() && !kind.task.empty() && kind.make, "register_model: a model kind needs a name ('",
           kind.name, "'), a task ('", kind.task, "') and a factory");
  for (const KeyDoc& k : kind.keys)
    KS_CHECK(is_model_field(k.key), "register_model: model kind '", kind.name, "' lists key '", k.key,
             "', which is no ModelConfig field; a kind's own keys go into its options (with_model_options)");
  if (!plugin_may_register("model kind", kind.name, registry().count(kind.name) > 0)) return false;
  const std::string name = kind.name;
  registry().insert_or_assign(name, std::move(kind));
  return true;
}

const ModelKind* find_model_kind(const std::string& name) {
  auto it = registry().find(name);
  return it == registry().end() ? nullptr : &it->second;
}

const ModelKind& model_kind(const std::string& name, const std::string& prefix) {
  if (const ModelKind* kind = find_model_kind(name)) return *kind;
  const std::vector<std::string> known = model_kinds();
  std::string list;
  for (size_t i = 0; i < known.size(); ++i) list += (i == 0 ? "" : i + 1 == known.size() ? " or " : ", ") + known[i];
  const std::string near = nearest_key(name, known);
  throw Error(str("config: ", prefix, "model: unknown model '", name.substr(0, 64), "' (expected ", list,
                  near.empty() ? std::string() : str("; did you mean ", near, "?"),
                  "); a plugin's model kind is known once the plugin is loaded: keystone train --plugin FILE, "
                  "or the config's \"plugins\" list"));
}

std::vector<std::string> model_kinds() {
  std::vector<std::string> out;
  for (const auto& [name, _] : registry()) out.push_back(name);
  return out;
}

std::string default_model_for_task(const std::string& task) {
  for (const auto& [name, kind] : registry())
    if (kind.task == task && kind.task_default) return name;
  return "";
}

}  // namespace ks::models
