// nn/attention/attention.cpp — the shared config's validation, the family
// registry (and what the config file reads through it: each family's option
// keys), and finding the attention modules of a model.
#include "nn/attention/attention.h"

#include <cmath>
#include <limits>

namespace ks::nn {
namespace {

Registry<AttentionFamily>& registry() {
  static Registry<AttentionFamily> r("attention family");
  return r;
}

// The family `type`; else throws "<where>type: unknown family ..." (where:
// "attention." from validate, "config: model.attention." from the config file).
const AttentionFamily& family(const std::string& type, const std::string& where = "attention.") {
  if (const AttentionFamily* f = registry().find(type)) return *f;
  throw Error(
      str(where, "type: unknown family '", type, "' (expected one of: ", listed(attention_families(), ", "), ")"));
}

std::shared_ptr<const AttentionOptions> defaults(const AttentionFamily& f) {
  return f.parse(nlohmann::json::object(), "");
}

bool has_key(const AttentionFamily& f, const std::string& key) {
  for (const KeyDoc& k : f.keys())
    if (k.key == key) return true;
  return false;
}

// The families that take `key`, in registry order.
std::vector<std::string> owners_of(const std::string& key) {
  std::vector<std::string> out;
  for (auto& [name, f] : registry())
    if (has_key(f, key)) out.push_back(name);
  return out;
}

// The families whose default options say yes to `takes`, in registry order.
std::vector<std::string> families_that(bool (AttentionOptions::*takes)() const) {
  std::vector<std::string> out;
  for (auto& [name, f] : registry())
    if (((*defaults(f)).*takes)()) out.push_back(name);
  return out;
}

}  // namespace

bool register_attention_family(const std::string& type, AttentionFamily family) {
  return registry().add(type, family, std::numeric_limits<int>::max());  // after the built-in families
}
bool register_attention_family(const std::string& type, AttentionFamily family, int order) {
  return registry().add(type, family, order);
}

std::vector<std::string> attention_families() { return registry().names(); }

AttentionConfig AttentionConfig::at_width(int64_t d) const {
  AttentionConfig a = *this;
  a.d_model = d;
  a.kv_dim = 0;
  return a;
}

AttentionConfig AttentionConfig::cross() const {
  AttentionConfig a = *this;
  a.rope_theta = 0;  // the decoder's queries and the encoder's keys share no positions
  a.rope_scaling = {};
  a.window = 0;  // a window counts positions the encoder's keys do not share
  a.alibi = false;
  return a;
}

void AttentionConfig::validate() const {
  const AttentionFamily& f = family(type);
  KS_CHECK(d_model > 0, "attention: d_model must be positive, got ", d_model);
  KS_CHECK(heads > 0, "attention.heads must be positive, got ", heads);
  KS_CHECK(kv_dim >= 0, "attention.kv_dim must be >= 0, got ", kv_dim);
  KS_CHECK(head_dim >= 0, "attention.head_dim must be >= 0 (0 means d_model / heads), got ", head_dim);
  if (head_dim == 0)
    KS_CHECK(d_model % heads == 0, "attention.heads: ", heads, " heads do not divide d_model ", d_model,
             "; set attention.head_dim (the \"fixed\" family allows any head size)");
  if (options) {
    const AttentionOptions& given = *options;  // typeid of a named object: no call inside typeid's operand
    KS_CHECK(typeid(given) == *f.options_type, "attention '", type, "': its options are another family's");
  }
  KS_CHECK(dropout >= 0 && dropout < 1, "attention.dropout must be in [0, 1), got ", dropout);
  KS_CHECK(rope_theta >= 0 && std::isfinite(rope_theta), "attention.rope_theta must be >= 0 (0: no rotary ",
           "embeddings), got ", rope_theta);
  KS_CHECK(rope_theta == 0 || resolved_head_dim() % 2 == 0, "attention.rope_theta: rotary embeddings pair ",
           "dimension i with i + p/2, so the head size must be even, got ", resolved_head_dim());
  check_rope_scaling(rope_scaling, "attention.rope_scaling.");
  KS_CHECK(rope_scaling.type == RopeScalingType::None || rope_theta > 0,
           "attention.rope_scaling: scales rotary embeddings, which need rope_theta > 0");
  KS_CHECK(kv_heads >= 0, "attention.kv_heads must be >= 0 (0 means heads), got ", kv_heads);
  KS_CHECK(kv_heads == 0 || heads % kv_heads == 0, "attention.kv_heads: ", kv_heads, " key/value heads do not divide ",
           heads, " heads (each key/value head serves an equal group of query heads)");
  // Held here: the family's defaults are a temporary (a reference to *defaults(f) would dangle).
  const std::shared_ptr<const AttentionOptions> held = options ? options : defaults(f);
  const AttentionOptions& opts = *held;
  KS_CHECK(resolved_kv_heads() == heads || opts.takes_kv_groups(), "attention.kv_heads: the \"", type,
           "\" family has one key/value head per query head, got kv_heads ", kv_heads, " for ", heads,
           " heads (grouped-query attention: ", listed(families_that(&AttentionOptions::takes_kv_groups), " and "),
           ")");
  KS_CHECK(window >= 0, "attention.window must be >= 0 (0: no sliding window), got ", window);
  KS_CHECK(window == 0 || opts.takes_window(), "attention.window: the \"", type, "\" family does not take a ",
           "sliding window (", listed(families_that(&AttentionOptions::takes_window), " and "), " do)");
  KS_CHECK(!alibi || opts.takes_alibi(), "attention.alibi: the \"", type, "\" family does not take ALiBi (",
           listed(families_that(&AttentionOptions::takes_alibi), " and "), " do)");
  opts.validate(*this);
}

std::shared_ptr<Attention> make_attention(const AttentionConfig& cfg) {
  cfg.validate();
  return family(cfg.type).make(cfg);
}

AttentionCost attention_cost(const AttentionConfig& cfg, int64_t seq_len, bool causal) {
  cfg.validate();
  return family(cfg.type).cost(cfg, seq_len, causal);
}

std::vector<KeyDoc> attention_option_keys() {
  std::vector<KeyDoc> out;
  for (auto& [_, f] : registry())
    for (const KeyDoc& k : f.keys()) {
      bool seen = false;
      for (const KeyDoc& o : out) seen = seen || o.key == k.key;
      if (seen) continue;
      std::string owners;
      for (const std::string& n : owners_of(k.key)) owners += (owners.empty() ? "" : "/") + n;
      out.push_back({k.key, owners + ": " + k.doc});
    }
  return out;
}

std::shared_ptr<const AttentionOptions> parse_attention_options(const nlohmann::json& section, const std::string& type,
                                                                const std::string& where) {
  const AttentionFamily& f = family(type, "config: " + where);
  for (auto& [key, value] : section.items()) {
    const std::vector<std::string> owners = owners_of(key);
    if (has_key(f, key) || owners.empty()) continue;  // the family's own, or a shared key
    // Another family's key: fine at that family's default (a resolved config
    // of any family lists it so), else the user meant another family.
    bool at_default = false;
    for (const std::string& owner : owners) {
      const AttentionFamily& o = registry().at(owner);
      const nlohmann::json given = o.parse(nlohmann::json{{key, value}}, where)->to_json();
      at_default = at_default || given.at(key) == defaults(o)->to_json().at(key);
    }
    KS_CHECK(at_default, "config: ", where, key, " applies to ", listed(owners, " and "), " only, not '", type, "'");
  }
  return f.parse(section, where);
}

nlohmann::json attention_options_json(const AttentionConfig& cfg) {
  nlohmann::json out = cfg.options ? cfg.options->to_json() : defaults(family(cfg.type))->to_json();
  for (auto& [_, f] : registry()) {
    const nlohmann::json others = defaults(f)->to_json();  // named: items() does not keep a temporary alive
    for (auto& [key, value] : others.items())
      if (!out.contains(key)) out[key] = value;
  }
  return out;
}

namespace {
void collect_attention(Module& m, const std::string& path, std::vector<std::pair<std::string, Attention*>>& out) {
  if (auto* a = dynamic_cast<Attention*>(&m)) out.emplace_back(path, a);
  for (auto& [name, child] : m.named_children())
    collect_attention(*child, path.empty() ? name : path + "." + name, out);
}
}  // namespace

std::vector<std::pair<std::string, Attention*>> named_attention(Module& root) {
  std::vector<std::pair<std::string, Attention*>> out;
  collect_attention(root, "", out);
  return out;
}

}  // namespace ks::nn
