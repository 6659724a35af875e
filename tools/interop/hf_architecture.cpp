// tools/interop/hf_architecture.cpp — the architecture registry and the
// config/tensor readers the descriptors check with.
#include "tools/interop/hf_architecture.h"

#include <cmath>

#include "core/copy.h"
#include "core/error.h"
#include "core/registry.h"
#include "models/decoder_lm.h"
#include "nn/user_input.h"
#include "ops/elementwise.h"
#include "ops/shape.h"
#include "ops/view.h"

namespace ks::interop {

namespace {
Registry<HfArchitecture>& registry() {
  static Registry<HfArchitecture> r("hf architecture");
  return r;
}
}  // namespace

std::string json_kind(const json& j) {
  switch (j.type()) {
    case json::value_t::object: return "an object";
    case json::value_t::array: return "an array";
    case json::value_t::string: return "a string";
    case json::value_t::boolean: return "true or false";
    case json::value_t::null: return "null";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
    case json::value_t::number_float: return "a number";
    default: return "not a JSON value";
  }
}

HfConfig::HfConfig(json j, std::string where) : j_(std::move(j)), where_(std::move(where)) {
  if (!j_.is_object()) throw Error(str("hf config ", where_, ": expected a JSON object, got ", json_kind(j_)));
}

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
  const json& v = j_.at(key);
  if (v.is_number_unsigned() ? v.get<uint64_t>() > uint64_t(INT32_MAX) : v.get<int64_t>() < INT32_MIN)
    fail(key, str(nn::json_excerpt(v), " is out of range (sizes and ids fit in 32 bits)"));
  return v.get<int64_t>();
}

int64_t HfConfig::positive_or(const std::string& key, int64_t fallback) const {
  if (!has(key)) return fallback;
  const int64_t v = integer_or(key, fallback);
  if (v <= 0) fail(key, str("must be a positive integer (or null for the default), got ", v));
  return v;
}

double HfConfig::probability_or(const std::string& key, double fallback) const {
  const double p = number_or(key, fallback);
  if (!(p >= 0 && p < 1)) fail(key, str("must be a probability in [0, 1), got ", nn::json_excerpt(j_.at(key))));
  return p;
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
  KS_CHECK(!registry().contains(name), "hf architecture ", name, " is registered twice");
  return registry().add(name, std::move(a));
}

const HfArchitecture& hf_architecture(const std::string& name, const std::string& where) {
  if (const HfArchitecture* a = registry().find(name)) return *a;
  throw Error(str("hf config ", where, ": \"architectures\": unknown architecture \"", name,
                  "\" (known: ", listed(registry().names(), ", "), ")"));
}

std::vector<const HfArchitecture*> hf_architectures() {
  std::vector<const HfArchitecture*> out;
  for (const auto& [n, a] : registry()) out.push_back(&a);
  return out;
}

Tensor ModelState::at(const std::string& name) const {
  auto it = by_name_.find(name);
  KS_CHECK(it != by_name_.end(), "hf export: the model has no tensor '", name, "'");
  return contiguous_raw(it->second);
}

namespace {
// The decoder LM's own keys (tie_embeddings, tied_lookup_scaled) of a config
// the importer builds or the exporter reads.
const models::DecoderLmOptions& lm_options(const models::ModelConfig& m) {
  return m.options_as<models::DecoderLmOptions>();
}
}  // namespace

bool untie_keystone_lookups(models::ModelConfig& m, nn::NamedTensors* state) {
  if (m.model != "decoder_lm" || !lm_options(m).tie_embeddings) return false;
  const bool scaled = lm_options(m).tied_lookup_scaled, reversed = m.tied_lookup_reversed;
  if (!scaled && !reversed) return false;
  models::DecoderLmOptions o = lm_options(m);
  o.tie_embeddings = false;
  o.tied_lookup_scaled = false;
  m.with_options(o);
  m.tied_lookup_reversed = false;
  if (!state) return true;
  Tensor* tok = nullptr;
  for (auto& [name, t] : *state)
    if (name == "tok.weight") tok = &t;
  KS_CHECK(tok != nullptr, "hf export: the tied model has no tensor 'tok.weight'");
  const Tensor table = *tok;
  // As DecoderLM::features makes a tied lookup: flip, then the √d product.
  Tensor lookups = reversed ? flip(table, {-1}) : table;
  if (scaled) lookups = mul(lookups, std::sqrt(double(m.d_model)));
  *tok = contiguous_raw(lookups);
  state->emplace_back("head.weight", table);
  return true;
}

std::vector<std::string> causal_lm_mismatches(const models::ModelConfig& m, const std::string& architecture) {
  std::vector<std::string> why;
  if (m.model != "decoder_lm") why.push_back(str("model \"", m.model, "\" (", architecture, " is a decoder_lm)"));
  if (!m.pre_norm) why.push_back(str("pre_norm false (", architecture, " is pre-norm)"));
  if (m.model == "decoder_lm" && lm_options(m).tie_embeddings &&
      (lm_options(m).tied_lookup_scaled || m.tied_lookup_reversed))
    why.push_back(str("tie_embeddings true with tied_lookup_scaled or tied_lookup_reversed true (", architecture,
                      " uses a tied table's lookups as they are)"));
  // "fixed" is softmax attention with an explicit head size (nn/attention/softmax_attention.h).
  if (m.attention.type != "softmax" && m.attention.type != "fixed")
    why.push_back(str("attention.type \"", m.attention.type, "\" (", architecture, ": softmax, or fixed)"));
  if (m.attention.alibi) why.push_back(str("attention.alibi true (", architecture, " has no ALiBi)"));
  return why;
}

std::string joined(const std::vector<std::string>& reasons) {
  std::string out;
  for (const auto& r : reasons) out += (out.empty() ? "" : "; ") + r;
  return out;
}

void set_head(models::ModelConfig& m, const HfConfig& c, bool tied_default) {
  models::DecoderLmOptions o = lm_options(m);
  o.tie_embeddings = c.boolean_or("tie_word_embeddings", tied_default);
  o.tied_lookup_scaled = false;
  m.with_options(o);
  m.tied_lookup_reversed = false;
}

void import_head(nn::NamedTensors& out, HfTensors& t, const models::ModelConfig& m, const Tensor& table,
                 const std::string& why) {
  if (lm_options(m).tie_embeddings) {
    if (t.has("lm_head.weight"))
      KS_CHECK(t.take("lm_head.weight", table.sizes(), why).to_vector<float>() == table.to_vector<float>(),
               "hf import: tensor 'lm_head.weight' differs from the embedding, but config.json ties them ",
               "(tie_word_embeddings true)");
    return;
  }
  KS_CHECK(t.has("lm_head.weight"), "hf import: missing tensor 'lm_head.weight' ",
           "(config.json has tie_word_embeddings false)");
  out.emplace_back("head.weight", t.take("lm_head.weight", table.sizes(), why));
}

void export_head(nn::NamedTensors& out, const ModelState& s, const models::ModelConfig& m) {
  if (!lm_options(m).tie_embeddings) out.emplace_back("lm_head.weight", s.at("head.weight"));
}

std::vector<HfLora> one_to_one_lora(const LoraAdapters& adapters, int64_t r, double alpha,
                                    const std::function<std::string(const std::string&)>& hf_module,
                                    const std::string& architecture) {
  std::vector<HfLora> out;
  for (const auto& [path, ab] : adapters) {
    const std::string module = hf_module(path);
    KS_CHECK(!module.empty(), "peft export: the LoRA adapter on '", path, "' has no ", architecture,
             " module to go on");
    out.push_back({module, ab.first, ab.second, r, alpha});
  }
  return out;
}

Tensor transposed(const Tensor& t) { return contiguous_raw(transpose(t, 0, 1)); }

Tensor slice(const Tensor& t, int64_t dim, int64_t start, int64_t length) {
  return contiguous_raw(narrow(t, dim, start, length));
}

}  // namespace ks::interop
