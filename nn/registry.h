// nn/registry.h — a registry of named descriptors that register themselves
// from their own source files (nn/norm.h's norms, nn/feed_forward.h's
// feed-forward blocks), so that adding one edits no shared list. A plugin's
// names arrive when it loads and may not replace an existing one
// (core/plugin_loader.h plugin_may_register).
// Not here: the descriptors, the config keys that choose them (models/config.cpp).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/plugin_loader.h"

namespace ks::nn {

// "a", "a<last>b", "a, b<last>c" (last: " or ", " | ", ...).
inline std::string listed(const std::vector<std::string>& names, const char* last) {
  std::string s;
  for (size_t i = 0; i < names.size(); ++i) s += (i == 0 ? "" : i + 1 == names.size() ? last : ", ") + names[i];
  return s;
}

// One registry per Entry type: a function-local static, so registrations from
// static initialisers in any order find it constructed.
template <class Entry> class Registry {
 public:
  explicit Registry(const char* what) : what_(what) {}
  bool add(const std::string& name, Entry entry) {
    KS_CHECK(!name.empty(), what_, ": a descriptor needs a name");
    if (!plugin_may_register(what_, name, entries_.count(name) > 0)) return false;
    entries_[name] = std::move(entry);
    return true;
  }
  // The entry named `name`; else throws "unknown <what> 'x' (expected a or b)".
  const Entry& at(const std::string& name) const {
    auto it = entries_.find(name);
    if (it != entries_.end()) return it->second;
    throw Error(str("unknown ", what_, " '", name, "' (expected ", listed(names(), " or "), ")"));
  }
  // Every name, sorted.
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (auto& [name, _] : entries_) out.push_back(name);
    return out;
  }

 private:
  const char* what_;
  std::map<std::string, Entry> entries_;
};

}  // namespace ks::nn
