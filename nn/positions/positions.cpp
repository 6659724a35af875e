// nn/positions/positions.cpp — the registry of position kinds and what the
// config file reads through it.
#include "nn/positions/positions.h"

#include <map>

#include "core/plugin_loader.h"

namespace ks::nn {
namespace {

std::map<std::string, PositionKind>& registry() {
  static std::map<std::string, PositionKind> r;
  return r;
}

// "a", "a or b", "a, b or c".
std::string listed(const std::vector<std::string>& names, const char* last) {
  std::string s;
  for (size_t i = 0; i < names.size(); ++i) s += (i == 0 ? "" : i + 1 == names.size() ? last : ", ") + names[i];
  return s;
}

std::vector<std::string> owners_of(const std::string& key) {
  std::vector<std::string> out;
  for (auto& [name, k] : registry())
    for (const OptionKey& o : k.keys)
      if (o.key == key) out.push_back(name);
  return out;
}

}  // namespace

std::shared_ptr<Module> Positions::make_table(int64_t, int64_t) const { return nullptr; }

Tensor Positions::add_table(const Module&, const Tensor& x, int64_t) const { return x; }

void Positions::init_table_normal(Module&, double) const {}

bool register_position_kind(const std::string& name, PositionKind kind) {
  if (!plugin_may_register("position kind", name, registry().count(name) > 0)) return false;
  registry()[name] = std::move(kind);
  return true;
}

std::vector<std::string> position_kinds() {
  std::vector<std::string> out;
  for (auto& [name, _] : registry()) out.push_back(name);
  return out;
}

std::shared_ptr<const Positions> parse_positions(const std::string& name, const nlohmann::json& section,
                                                 const std::string& where) {
  auto it = registry().find(name);
  KS_CHECK(it != registry().end(), "config: ", where, "positions: expected ", listed(position_kinds(), " or "),
           ", got '", name, "'");
  if (section.is_object())
    for (auto& [key, _] : section.items()) {
      const std::vector<std::string> owners = owners_of(key);
      bool own = false;
      for (const std::string& o : owners) own = own || o == name;
      KS_CHECK(owners.empty() || own, "config: ", where, key, " applies to positions ", listed(owners, " and "),
               " only, not '", name, "'");
    }
  return it->second.parse(section, where);
}

std::vector<OptionKey> position_option_keys() {
  std::vector<OptionKey> out;
  for (auto& [_, kind] : registry())
    for (const OptionKey& k : kind.keys) {
      bool seen = false;
      for (const OptionKey& o : out) seen = seen || o.key == k.key;
      if (!seen) out.push_back({k.key, "positions " + listed(owners_of(k.key), " and ") + ": " + k.doc});
    }
  return out;
}

}  // namespace ks::nn
