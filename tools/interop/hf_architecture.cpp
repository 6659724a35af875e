// tools/interop/hf_architecture.cpp — the architecture registry and the
// config/tensor readers the descriptors check with.
#include "tools/interop/hf_architecture.h"

#include "core/copy.h"
#include "core/error.h"
#include "nn/user_input.h"
#include "ops/view.h"

namespace ks::interop {

namespace {
std::map<std::string, HfArchitecture>& registry() {
  static std::map<std::string, HfArchitecture> r;
  return r;
}
}  // namespace

void HfConfig::fail(const std::string& key, const std::string& problem) const {
  throw Error(str("hf config ", where_, ": \"", key, "\": ", problem));
}

int64_t HfConfig::integer(const std::string& key) const {
  if (!has(key)) fail(key, "missing");
  const int64_t v = integer_or(key, 0);
  if (v <= 0) fail(key, str("must be a positive integer, got ", v));
  return v;
}

int64_t HfConfig::integer_or(const std::string& key, int64_t fallback) const {
  if (!has(key)) return fallback;
  if (!j_.at(key).is_number_integer()) fail(key, str("must be an integer, got ", nn::json_excerpt(j_.at(key))));
  return j_.at(key).get<int64_t>();
}

double HfConfig::number_or(const std::string& key, double fallback) const {
  if (!has(key)) return fallback;
  if (!j_.at(key).is_number()) fail(key, str("must be a number, got ", nn::json_excerpt(j_.at(key))));
  return j_.at(key).get<double>();
}

bool HfConfig::boolean_or(const std::string& key, bool fallback) const {
  if (!has(key)) return fallback;
  if (!j_.at(key).is_boolean()) fail(key, str("must be true or false, got ", nn::json_excerpt(j_.at(key))));
  return j_.at(key).get<bool>();
}

std::string HfConfig::string_or(const std::string& key, const std::string& fallback) const {
  if (!has(key)) return fallback;
  if (!j_.at(key).is_string()) fail(key, str("must be a string, got ", nn::json_excerpt(j_.at(key))));
  return j_.at(key).get<std::string>();
}

HfTensors::HfTensors(const nn::NamedTensors& tensors, std::string where) : where_(std::move(where)) {
  for (const auto& [name, t] : tensors) {
    by_name_[name] = t;
    taken_[name] = false;
  }
}

Tensor HfTensors::take(const std::string& name, const Shape& shape, const std::string& why) {
  auto it = by_name_.find(name);
  KS_CHECK(it != by_name_.end(), "hf import ", where_, ": missing tensor '", name, "'");
  KS_CHECK(it->second.sizes() == shape, "hf import ", where_, ": tensor '", name, "' has shape ", it->second.sizes(),
           " but config.json (", why, ") needs ", shape);
  KS_CHECK(it->second.dtype() == kFloat32, "hf import ", where_, ": tensor '", name, "' is not floating point");
  taken_[name] = true;
  return it->second;
}

void HfTensors::check_all_taken(const std::string& architecture) const {
  for (const auto& [name, taken] : taken_)
    KS_CHECK(taken, "hf import ", where_, ": tensor '", name, "' is not part of ", architecture,
             " (or not of the model config.json describes)");
}

bool register_hf_architecture(HfArchitecture a) {
  const std::string name = a.name;
  KS_CHECK(registry().emplace(name, std::move(a)).second, "hf architecture ", name, " is registered twice");
  return true;
}

const HfArchitecture& hf_architecture(const std::string& name, const std::string& where) {
  auto it = registry().find(name);
  if (it != registry().end()) return it->second;
  std::string known;
  for (const auto& [n, a] : registry()) known += (known.empty() ? "" : ", ") + n;
  throw Error(
      str("hf config ", where, ": \"architectures\": unknown architecture \"", name, "\" (known: ", known, ")"));
}

std::vector<const HfArchitecture*> hf_architectures() {
  std::vector<const HfArchitecture*> out;
  for (const auto& [n, a] : registry()) out.push_back(&a);
  return out;
}

Tensor transposed(const Tensor& t) { return contiguous_raw(transpose(t, 0, 1)); }

Tensor slice(const Tensor& t, int64_t dim, int64_t start, int64_t length) {
  return contiguous_raw(narrow(t, dim, start, length));
}

}  // namespace ks::interop
