// models/config.cpp — strict JSON parsing of model configs: every model's keys,
// the few shared fields a kind may take, and the mechanism that adds a kind's
// own (its typed options, models/kind.h); no kind is named here.
#include "models/config.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <variant>

#include "core/registry.h"
#include "models/kind.h"
#include "nn/user_input.h"

namespace ks::models {

namespace {

using json = nlohmann::json;

// "a: what a is; b: what b is" over a registry's names.
template <class Doc> std::string choices(const std::vector<std::string>& names, Doc doc) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : "; ") + n + ": " + doc(n);
  return s;
}

// The keys of every model; each kind's own follow them (its descriptor's,
// models/kind.h). What each means is documented here once; ModelConfig's
// comments say how the code uses it.
std::vector<KeyDoc> every_model_keys() {
  std::string kinds;
  for (const std::string& k : model_kinds()) kinds += (kinds.empty() ? "" : " | ") + k;
  std::string positions;
  for (const std::string& k : nn::position_kinds()) positions += (positions.empty() ? "" : " | ") + k;
  std::vector<KeyDoc> keys = {
      {"model", kinds + " (default: the data set's task)"},
      {"d_model", "the width of every token's vector"},
      {"d_ff", "the feed-forward inner width; 0: the ff's rule (mlp: 4 * d_model; gated: see ff)"},
      {"max_len", "the longest sequence, in tokens (the positions table)"},
      {"dropout", "dropout after attention, feed-forward and embeddings, in [0, 1)"},
      {"pre_norm", "layer norm before each sublayer (true) or after it (false, the seq2seq default)"},
      {"activation", "the feed-forward activation: gelu | relu | gelu_tanh"},
      {"positions", positions + " (sinusoidal: the seq2seq default)"},
      {"attention", "the attention of every layer (its keys below)"},
      {"norm", "every norm: " + choices(nn::norm_kinds(), [](auto& n) { return nn::norm_kind(n).doc; }) +
                   " (default layernorm)"},
      {"norm_eps", "every norm's eps, > 0 (default 1e-5)"},
      {"ff",
       "the feed-forward: " + choices(nn::feed_forward_kinds(), [](auto& n) { return nn::feed_forward_kind(n).doc; }) +
           " (default mlp; activation applies to mlp)"},
      {"bias", "false: no biases in the attention projections, feed-forwards, output heads and norms"}};
  for (const KeyDoc& k : nn::position_option_keys()) keys.push_back({k.key, k.doc});
  return keys;
}

// Throws "config: <p><key>: unknown <what> 'v' (expected a or b; did you mean a?)" unless v is in `known`.
void check_choice(const std::string& v, const std::vector<std::string>& known, const std::string& p, const char* key,
                  const char* what) {
  if (std::find(known.begin(), known.end(), v) != known.end()) return;
  const std::string near = nearest_key(v, known);
  throw Error(str("config: ", p, key, ": unknown ", what, " '", v, "' (expected ", listed(known, " or "),
                  near.empty() ? std::string() : str("; did you mean ", near, "?"), ")"));
}

// The shared ModelConfig fields a kind may list among its keys (several
// kinds take each, and generic code reads them: models/config.h), by key:
// the parser reads, writes and range-checks them for the kinds that list
// them. A kind's own keys are its options' (ModelKind::parse_options), never
// entries here.
using Field = std::variant<int64_t ModelConfig::*, bool ModelConfig::*>;
const std::map<std::string, Field>& fields() {
  using M = ModelConfig;
  static const std::map<std::string, Field> table = {{"layers", &M::layers},
                                                     {"vocab_size", &M::vocab_size},
                                                     {"pad_id", &M::pad_id},
                                                     {"tied_lookup_reversed", &M::tied_lookup_reversed}};
  return table;
}

// The upper bound on a shared size field, where it allocates; 0: none.
int64_t field_bound(const std::string& key) {
  static const std::map<std::string, int64_t> bounds = {{"vocab_size", kMaxVocabSize}, {"layers", kMaxLayers}};
  auto it = bounds.find(key);
  return it == bounds.end() ? 0 : it->second;
}

// The attention keys every family has; each family's own follow them
// (attention_keys), from its registration.
std::vector<KeyDoc> shared_attention_keys() {
  // The families the registry had at start-up, in its order (the papers'
  // families, then the linear ones, then any a plugin added); "..." for those
  // a plugin may add later.
  std::string listed_families;
  for (const std::string& f : nn::attention_families()) listed_families += f + " | ";
  return {{"type", "the attention family: " + listed_families + "..."},
          {"heads", "attention heads"},
          {"head_dim", "each head's width p; 0: d_model / heads; \"seq\": max_len"},
          {"kv_heads",
           "key/value heads, dividing heads (grouped-query attention; 1: multi-query); 0: heads (softmax, fixed)"},
          {"alibi", "ALiBi linear position biases on the scores, -m_h|i - j| (softmax, fixed)"},
          {"dropout", "dropout on the attention weights, in [0, 1)"},
          {"bias", "biases in the projections"},
          {"out_bias", "with bias: the output projection's too (false: q, k and v only, as Qwen2's)"},
          {"window", "> 0: a sliding window over causal self-attention, the last `window` positions (softmax, fixed)"}};
}

std::vector<KeyDoc> attention_keys() {
  std::vector<KeyDoc> keys = shared_attention_keys();
  for (const KeyDoc& k : nn::attention_option_keys()) keys.push_back({k.key, k.doc});
  return keys;
}

std::vector<std::string> names(const std::vector<KeyDoc>& keys) {
  std::vector<std::string> out;
  for (const KeyDoc& k : keys) out.push_back(k.key);
  return out;
}

// Throws for the first key of `j` outside `allowed`, suggesting the nearest allowed one.
void reject_unknown(const json& j, const std::vector<KeyDoc>& allowed, const std::string& where,
                    const std::string& context) {
  const std::vector<std::string> known = names(allowed);
  for (auto& [key, _] : j.items()) {
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    const std::string near = nearest_key(key, known);
    throw Error(str("config: ", where, key, ": unknown key", context,
                    near.empty() ? std::string() : str(" (did you mean ", where, near, "?)")));
  }
}

nn::AttentionConfig parse_attention(const json& j, const ModelConfig& m, const std::string& prefix) {
  const std::string at = prefix + "attention.";
  KS_CHECK(j.is_object(), "config: ", prefix, "attention: expected an object, got ", nn::json_excerpt(j));
  reject_unknown(j, attention_keys(), at, "");
  nn::AttentionConfig a;
  nn::read_json_key(j, "type", a.type, at);
  nn::read_json_key(j, "heads", a.heads, at);
  if (j.contains("head_dim") && j.at("head_dim").is_string()) {
    KS_CHECK(j.at("head_dim") == "seq", "config: ", at, "head_dim: expected an integer or \"seq\", got ",
             nn::json_excerpt(j.at("head_dim")));
    a.head_dim = m.max_len;
  } else {
    nn::read_json_key(j, "head_dim", a.head_dim, at);
  }
  nn::read_json_key(j, "kv_heads", a.kv_heads, at);
  nn::read_json_key(j, "alibi", a.alibi, at);
  nn::read_json_key(j, "dropout", a.dropout, at);
  nn::read_json_key(j, "bias", a.bias, at);
  nn::read_json_key(j, "out_bias", a.out_bias, at);
  nn::read_json_key(j, "window", a.window, at);
  a = a.at_width(m.d_model);
  a.options = nn::parse_attention_options(j, a.type, at);  // the family's own keys
  try {
    a.validate();
    nn::AttentionConfig self = a;  // as the layers' self-attention gets it (models/shared.h layer_config)
    m.position_kind()->configure_self_attention(self);
    self.validate();
  } catch (const Error& e) {
    throw Error(str("config: ", prefix, e.what()));  // validate names "attention.<key>"
  }
  return a;
}

// The kind's keys after every model's: the shared fields it takes, then its options'.
std::vector<KeyDoc> kind_keys(const ModelKind& kind) {
  std::vector<KeyDoc> keys = kind.keys;
  if (kind.option_keys)
    for (const KeyDoc& k : kind.option_keys()) keys.push_back(k);
  return keys;
}

}  // namespace

void check_positive(int64_t v, const std::string& prefix, const char* key) {
  KS_CHECK(v > 0, "config: ", prefix, key, ": must be positive, got ", v);
}

void check_at_most(int64_t v, int64_t most, const std::string& prefix, const char* key) {
  KS_CHECK(v <= most, "config: ", prefix, key, ": at most ", most, ", got ", v);
}

bool is_model_field(const std::string& key) { return fields().count(key) > 0; }

std::vector<KeyDoc> model_keys(const std::string& family) {
  std::vector<KeyDoc> keys = every_model_keys();
  for (const KeyDoc& k : kind_keys(model_kind(family))) keys.push_back(k);
  for (const KeyDoc& k : attention_keys()) keys.push_back({"attention." + k.key, k.doc});
  return keys;
}

ModelConfig parse_model_config(const json& j, const std::string& prefix) {
  const std::string& p = prefix;
  KS_CHECK(j.is_object(), "config: ", p.empty() ? std::string() : p.substr(0, p.size() - 1) + ": ",
           "expected a JSON object, got ", nn::json_excerpt(j));
  ModelConfig m;
  nn::read_json_key(j, "model", m.model, p);
  const ModelKind& kind = model_kind(m.model, p);
  std::vector<KeyDoc> allowed = every_model_keys();
  for (const KeyDoc& k : kind_keys(kind)) allowed.push_back(k);
  if (kind.defaults) kind.defaults(m);
  reject_unknown(j, allowed, p, str(" for model '", m.model, "'"));

  nn::read_json_key(j, "d_model", m.d_model, p);
  nn::read_json_key(j, "d_ff", m.d_ff, p);
  nn::read_json_key(j, "max_len", m.max_len, p);
  nn::read_json_key(j, "dropout", m.dropout, p);
  nn::read_json_key(j, "pre_norm", m.pre_norm, p);
  std::string act = nn::activation_name(m.activation);
  nn::read_json_key(j, "activation", act, p);
  try {
    m.activation = nn::parse_activation(act);
  } catch (const Error& e) {
    throw Error(str("config: ", p, "activation: ", e.what()));
  }
  nn::read_json_key(j, "positions", m.positions, p);
  nn::read_json_key(j, "norm", m.norm, p);
  nn::read_json_key(j, "norm_eps", m.norm_eps, p);
  nn::read_json_key(j, "ff", m.ff, p);
  nn::read_json_key(j, "bias", m.bias, p);
  for (const KeyDoc& k : kind.keys)
    std::visit([&](auto member) { nn::read_json_key(j, k.key, m.*member, p); }, fields().at(k.key));
  if (kind.parse_options) m.options = kind.parse_options(j, p);  // its own keys, read as the shared ones are

  check_positive(m.d_model, p, "d_model");
  check_at_most(m.d_model, kMaxWidth, p, "d_model");
  KS_CHECK(m.d_ff >= 0, "config: ", p, "d_ff: must be >= 0 (0 means 4 * d_model), got ", m.d_ff);
  check_at_most(m.d_ff, 64 * kMaxWidth, p, "d_ff");
  check_positive(m.max_len, p, "max_len");
  check_at_most(m.max_len, kMaxLength, p, "max_len");
  for (const KeyDoc& k : kind.keys)
    if (const int64_t most = field_bound(k.key))
      check_at_most(m.*std::get<int64_t ModelConfig::*>(fields().at(k.key)), most, p, k.key.c_str());
  KS_CHECK(m.dropout >= 0 && m.dropout < 1, "config: ", p, "dropout: must be in [0, 1), got ", m.dropout);
  m.position_options = nn::parse_positions(m.positions, j, p);
  check_choice(m.norm, nn::norm_kinds(), p, "norm", "norm");
  KS_CHECK(m.norm_eps > 0 && std::isfinite(m.norm_eps), "config: ", p,
           "norm_eps: must be a positive finite number, got ", m.norm_eps);
  check_choice(m.ff, nn::feed_forward_kinds(), p, "ff", "feed-forward");
  if (kind.validate) kind.validate(m, p);
  if (m.options) m.options->validate(m, p);
  const json& attention = j.contains("attention") ? j.at("attention") : json::object();
  m.attention = parse_attention(attention, m, p);
  // model.bias false removes the projections' biases too, unless the
  // attention section says otherwise (Qwen2: q/k/v biases, none elsewhere).
  if (!m.bias && !attention.contains("bias")) m.attention.bias = false;
  return m;
}

int64_t ModelConfig::resolved_d_ff() const { return nn::feed_forward_kind(ff).hidden(d_model, d_ff); }

const nlohmann::json& stored_model_defaults() {
  static const json defaults = {{"norm", "layernorm"}, {"norm_eps", 1e-5}, {"ff", "mlp"}, {"bias", true}};
  return defaults;
}

std::shared_ptr<const nn::Positions> ModelConfig::position_kind() const {
  // Options of another kind: `positions` was changed after parsing; the new kind starts from its defaults.
  if (position_options && position_options->kind() == positions) return position_options;
  return nn::parse_positions(positions, json::object(), "model.");
}

nlohmann::json ModelConfig::to_json() const {
  json a = nn::attention_options_json(attention);  // the family's keys, every other family's at its defaults
  a.update({{"type", attention.type},
            {"heads", attention.heads},
            {"head_dim", attention.resolved_head_dim()},
            {"kv_heads", attention.kv_heads},
            {"alibi", attention.alibi},
            {"dropout", attention.dropout},
            {"bias", attention.bias}});
  // Only when set: the resolved config of every other run keeps exactly the keys it had.
  if (!attention.out_bias) a["out_bias"] = false;
  if (attention.window > 0) a["window"] = attention.window;
  json j = {{"model", model},
            {"d_model", d_model},
            {"d_ff", resolved_d_ff()},
            {"max_len", max_len},
            {"dropout", dropout},
            {"pre_norm", pre_norm},
            {"activation", nn::activation_name(activation)},
            {"positions", positions},
            {"attention", a},
            {"norm", norm},
            {"norm_eps", norm_eps},
            {"ff", ff},
            {"bias", bias}};
  j.update(position_kind()->to_json());  // the kind's own keys (rope_theta), none for a table
  const ModelKind& kind = model_kind(model);
  for (const KeyDoc& k : kind.keys) std::visit([&](auto member) { j[k.key] = this->*member; }, fields().at(k.key));
  if (kind.parse_options) j.update((options ? options : kind.parse_options(json::object(), ""))->to_json());
  return j;
}

}  // namespace ks::models
