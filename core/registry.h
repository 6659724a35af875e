// core/registry.h — the one extension mechanism: a registry of named
// descriptors that register themselves from their own source files, so that
// adding an attention family, a position kind, a norm, a feed-forward block,
// a model kind or a Hugging Face architecture edits no shared list. A
// plugin's names arrive when it loads and may not replace an existing one
// (core/plugin_loader.h plugin_may_register). Beside it, the pieces every
// extension point's config reading shares: KeyDoc (one key a descriptor
// reads, with its meaning), listed() and nearest_key() for error texts.
//
// Not here: the descriptors themselves (each beside its code), the config
// sections that choose them (models/config.cpp, tools/train/run_config.cpp),
// op dispatch tables (core/dispatch.h: a table per op and device, not names).
#pragma once

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/plugin_loader.h"

namespace ks {

// One key a config section or a descriptor's options may hold and what it
// means: the table the reader accepts keys from, and what `keystone config
// --defaults` prints beside them.
struct KeyDoc {
  std::string key, doc;
};

// "a", "a<last>b", "a, b<last>c" (last: " or ", " and ", ...).
inline std::string listed(const std::vector<std::string>& names, const char* last) {
  std::string s;
  for (size_t i = 0; i < names.size(); ++i) s += (i == 0 ? "" : i + 1 == names.size() ? last : ", ") + names[i];
  return s;
}

// "a<sep>b<sep>c": a doc's list of choices ("adamw | adam | sgd").
inline std::string joined(const std::vector<std::string>& names, const char* sep) {
  std::string s;
  for (size_t i = 0; i < names.size(); ++i) s += (i == 0 ? "" : sep) + names[i];
  return s;
}

// The name of `known` nearest to `key` by edit distance when `key` is a near
// miss of it (a third of its letters or fewer differ), else "": the "did you
// mean" of every unknown-name error (core/registry.cpp).
std::string nearest_key(const std::string& key, const std::vector<std::string>& known);

// The registry of one kind of descriptor, `Entry`, by name (sorted). Each
// registry is a function-local static in its kind's source file, so that
// registrations from static initialisers in any order find it constructed:
//
//   Registry<NormKind>& norms() { static Registry<NormKind> r("norm"); return r; }
//
// `what` names the kind in messages ("norm", "attention family").
template <class Entry> class Registry {
 public:
  using Map = std::map<std::string, Entry>;

  explicit Registry(const char* what) : what_(what) {}

  // Adds (or, outside a plugin's loading, replaces) `name`; false when a
  // loading plugin names an existing entry (the registry keeps its own).
  // `order` places it in names() (lower first, then by name): the order a
  // kind's users see its choices listed in, the default first ("adamw, adam
  // or sgd"); a plugin's entries keep 0 and come after none in particular.
  bool add(const std::string& name, Entry entry, int order = 0) {
    KS_CHECK(!name.empty(), what_, ": a descriptor needs a name");
    if (!plugin_may_register(what_, name, entries_.count(name) > 0)) return false;
    entries_.insert_or_assign(name, std::move(entry));
    order_[name] = order;
    return true;
  }
  // The entry named `name`, or nullptr.
  const Entry* find(const std::string& name) const {
    auto it = entries_.find(name);
    return it == entries_.end() ? nullptr : &it->second;
  }
  // The entry named `name`; else throws "unknown <what> 'x' (expected a or b)".
  // A kind whose users see another wording writes it around find().
  const Entry& at(const std::string& name) const {
    if (const Entry* e = find(name)) return *e;
    throw Error(str("unknown ", what_, " '", name, "' (expected ", listed(names(), " or "), ")"));
  }
  bool contains(const std::string& name) const { return entries_.count(name) > 0; }
  // Every name, by order, then by name.
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (auto& [name, _] : entries_) out.push_back(name);
    std::stable_sort(out.begin(), out.end(),
                     [&](const std::string& a, const std::string& b) { return order_.at(a) < order_.at(b); });
    return out;
  }
  // The entries by name (not by order): `for (auto& [name, entry] : registry)`.
  typename Map::const_iterator begin() const { return entries_.begin(); }
  typename Map::const_iterator end() const { return entries_.end(); }
  const char* what() const { return what_; }

 private:
  const char* what_;
  Map entries_;
  std::map<std::string, int> order_;
};

}  // namespace ks

// A unique name per line for the registration macros' static flags
// (KS_REGISTER_OPTIMIZER, KS_REGISTER_KERNEL, ...).
#define KS_CONCAT_INNER(a, b) a##b
#define KS_CONCAT(a, b) KS_CONCAT_INNER(a, b)
