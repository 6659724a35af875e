// nn/positions/positions.cpp — the registry of position kinds and what the
// config file reads through it.
#include "nn/positions/positions.h"

#include "core/registry.h"

namespace ks::nn {
namespace {

Registry<PositionKind>& registry() {
  static Registry<PositionKind> r("position kind");
  return r;
}

std::vector<std::string> owners_of(const std::string& key) {
  std::vector<std::string> out;
  for (auto& [name, k] : registry())
    for (const KeyDoc& o : k.keys)
      if (o.key == key) out.push_back(name);
  return out;
}

}  // namespace

std::shared_ptr<Module> Positions::make_table(int64_t, int64_t) const { return nullptr; }

Tensor Positions::add_table(const Module&, const Tensor& x, int64_t) const { return x; }

void Positions::init_table_normal(Module&, double) const {}

bool register_position_kind(const std::string& name, PositionKind kind) {
  return registry().add(name, std::move(kind));
}

std::vector<std::string> position_kinds() { return registry().names(); }

std::shared_ptr<const Positions> parse_positions(const std::string& name, const nlohmann::json& section,
                                                 const std::string& where) {
  const PositionKind* kind = registry().find(name);
  KS_CHECK(kind, "config: ", where, "positions: expected ", listed(position_kinds(), " or "), ", got '", name, "'");
  if (section.is_object())
    for (auto& [key, _] : section.items()) {
      const std::vector<std::string> owners = owners_of(key);
      bool own = false;
      for (const std::string& o : owners) own = own || o == name;
      KS_CHECK(owners.empty() || own, "config: ", where, key, " applies to positions ", listed(owners, " and "),
               " only, not '", name, "'");
    }
  return kind->parse(section, where);
}

std::vector<KeyDoc> position_option_keys() {
  std::vector<KeyDoc> out;
  for (auto& [_, kind] : registry())
    for (const KeyDoc& k : kind.keys) {
      bool seen = false;
      for (const KeyDoc& o : out) seen = seen || o.key == k.key;
      if (!seen) out.push_back({k.key, "positions " + listed(owners_of(k.key), " and ") + ": " + k.doc});
    }
  return out;
}

}  // namespace ks::nn
