// nn/json_section.h — the one strict reader of a JSON object of a training
// config (its sections, and the options of every descriptor that reads its
// own keys: optimizers, schedules, data sets): typed reads with defaults, errors that name the key by its dotted
// path ("train.steps: expected an integer, got \"ten\""), and a final check
// that rejects every key nobody read, so a typo never passes silently, with
// the nearest key that was read as a suggestion ("did you mean train.steps?").
//
// Every section has a table of its keys with their meanings (KeyDoc):
// a key is read only from the table (reading one outside it is a bug, an
// internal error), so what `keystone config --defaults` prints beside each
// key is what the reader takes. Not here: the tables (tools/train/run_config.cpp,
// tools/train/data_setup.cpp) or the model section, which models/config.h
// validates itself.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "core/error.h"
#include "core/registry.h"
#include "nn/user_input.h"

namespace ks::nn {

class JsonSection {
 public:
  // `path` is the section's dotted name ("data", "train") for messages;
  // `keys` the table of the keys it may hold.
  JsonSection(const nlohmann::json& j, std::string path, const std::vector<KeyDoc>& keys)
      : j_(j), path_(std::move(path)), keys_(keys) {
    KS_CHECK(j_.is_object(), "config: ", path_, ": expected an object, got ", json_excerpt(j_));
  }
  // More keys the section may hold, known once a key read has told which
  // (data.dataset names the data set whose keys follow).
  void allow(const std::vector<KeyDoc>& keys) { keys_.insert(keys_.end(), keys.begin(), keys.end()); }

  std::string where(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }
  bool has(const std::string& key) const { return j_.contains(key); }

  // The value at `key` or `fallback` when absent; a value of the wrong type
  // (or a real where an integer is expected) is an error naming the key.
  template <class T> T get(const std::string& key, const T& fallback) {
    mark_read(key);
    if (!j_.contains(key)) {
      resolved_[key] = fallback;
      return fallback;
    }
    const nlohmann::json& v = j_.at(key);
    const bool ok = std::is_same_v<T, bool>          ? v.is_boolean()
                    : std::is_same_v<T, std::string> ? v.is_string()
                    : std::is_integral_v<T>          ? v.is_number_integer()
                    : std::is_floating_point_v<T>    ? v.is_number()
                                                     : true;
    KS_CHECK(ok, "config: ", where(key), ": expected ", kind<T>(), ", got ", json_excerpt(v));
    // nlohmann keeps integers >= 2^63 as unsigned: only a signed one can be negative,
    // and only an unsigned target can hold the large ones.
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      if constexpr (std::is_unsigned_v<T>)
        KS_CHECK(v.is_number_unsigned() || v.get<int64_t>() >= 0, "config: ", where(key),
                 ": must not be negative, got ", json_excerpt(v));
      else
        KS_CHECK(!v.is_number_unsigned() || v.get<uint64_t>() <= uint64_t(INT64_MAX), "config: ", where(key),
                 ": too large, got ", json_excerpt(v));
    }
    resolved_[key] = v;
    return v.get<T>();
  }
  // An integer at least `minimum`.
  int64_t get_at_least(const std::string& key, int64_t fallback, int64_t minimum) {
    int64_t v = get<int64_t>(key, fallback);
    KS_CHECK(v >= minimum, "config: ", where(key), ": must be at least ", minimum, ", got ", v);
    return v;
  }
  // An integer in [lo, hi]: the bound for sizes that allocate, so a typo of
  // a few digits is an error rather than an hour of swapping.
  int64_t get_between(const std::string& key, int64_t fallback, int64_t lo, int64_t hi) {
    int64_t v = get<int64_t>(key, fallback);
    KS_CHECK(v >= lo && v <= hi, "config: ", where(key), ": must be in [", lo, ", ", hi, "], got ", v);
    return v;
  }
  // A number in [lo, hi].
  double get_in(const std::string& key, double fallback, double lo, double hi) {
    double v = get<double>(key, fallback);
    KS_CHECK(v >= lo && v <= hi, "config: ", where(key), ": must be in [", lo, ", ", hi, "], got ", v);
    return v;
  }
  // A nested object (an empty one when absent).
  nlohmann::json object(const std::string& key) {
    mark_read(key);
    if (!j_.contains(key)) return nlohmann::json::object();
    resolved_[key] = j_.at(key);
    KS_CHECK(j_.at(key).is_object(), "config: ", where(key), ": expected an object, got ", json_excerpt(j_.at(key)));
    return j_.at(key);
  }
  // Replaces what resolved() shows for `key` (read already): a value the
  // reader normalised, such as a relative path made absolute.
  void set_resolved(const std::string& key, nlohmann::json value) { resolved_[key] = std::move(value); }
  // Every key read so far with the value used, defaults included: the
  // section as a resolved config shows it.
  const nlohmann::json& resolved() const { return resolved_; }
  // The meaning of every key read so far, by its dotted path within the
  // section ("type", "tokenizer.type"): what resolved() shows.
  nlohmann::json docs() const {
    nlohmann::json out = nested_docs_;
    for (const std::string& key : read_) out[key] = doc(key)->doc;
    return out;
  }
  // Adds a nested section's docs() under `key` (read already).
  void add_docs(const std::string& key, const nlohmann::json& docs) {
    for (auto& [k, v] : docs.items()) nested_docs_[key + "." + k] = v;
  }
  // Throws for the first key that no get/object call asked for, naming the
  // read key it is a near miss of; `context` (e.g. " for dataset 'listops'")
  // is added to the message.
  void finish(const std::string& context = "") const {
    for (auto& [key, _] : j_.items()) {
      if (read_.count(key)) continue;
      const std::string near = nearest_key(key, {read_.begin(), read_.end()});
      throw Error(str("config: ", where(key), ": unknown key", context,
                      near.empty() ? std::string() : str(" (did you mean ", where(near), "?)")));
    }
  }

 private:
  const KeyDoc* doc(const std::string& key) const {
    for (const KeyDoc& k : keys_)
      if (k.key == key) return &k;
    return nullptr;
  }
  void mark_read(const std::string& key) {
    KS_CHECK(doc(key) != nullptr, "internal error: config key ", where(key), " is read but not in its section's table");
    read_.insert(key);
  }
  template <class T> static const char* kind() {
    if constexpr (std::is_same_v<T, bool>)
      return "true or false";
    else if constexpr (std::is_same_v<T, std::string>)
      return "a string";
    else if constexpr (std::is_integral_v<T>)
      return "an integer";
    else
      return "a number";
  }
  const nlohmann::json& j_;
  std::string path_;
  std::vector<KeyDoc> keys_;
  std::set<std::string> read_;
  nlohmann::json resolved_ = nlohmann::json::object();
  nlohmann::json nested_docs_ = nlohmann::json::object();
};

}  // namespace ks::nn
