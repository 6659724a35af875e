// models/config.cpp — strict JSON parsing of model configs.
#include "models/config.h"

#include <set>

#include "nn/user_input.h"

namespace ks::models {
namespace {

using json = nlohmann::json;

// Reads one typed key if present; names the key on a type error. The type
// is checked before get<T>: nlohmann would truncate 10.5 to 10, and casting
// 1e30 to an integer is undefined behaviour.
template <class T>
void read(const json& j, const std::string& key, T& out, const std::string& where = "") {
  if (!j.contains(key)) return;
  const json& v = j.at(key);
  const bool ok = std::is_same_v<T, bool>          ? v.is_boolean()
                  : std::is_same_v<T, std::string> ? v.is_string()
                  : std::is_integral_v<T>          ? v.is_number_integer()
                                                   : v.is_number();
  KS_CHECK(ok, "config: ", where, key, ": expected ", std::is_same_v<T, bool> ? "true or false"
                                                   : std::is_same_v<T, std::string> ? "a string"
                                                   : std::is_integral_v<T> ? "an integer" : "a number",
           ", got ", nn::json_excerpt(v));
  // Every integer of a model config is a size or an id: within 32 bits, so
  // the product of two (heads * head_dim, 4 * d_model) never overflows.
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>)
    KS_CHECK(v.is_number_unsigned() ? v.get<uint64_t>() <= uint64_t(INT32_MAX) : v.get<int64_t>() >= INT32_MIN,
             "config: ", where, key, ": ", nn::json_excerpt(v), " is out of range (sizes and ids fit in 32 bits)");
  out = v.get<T>();
}

void reject_unknown(const json& j, const std::set<std::string>& allowed, const std::string& where,
                    const std::string& model) {
  for (auto& [key, _] : j.items())
    KS_CHECK(allowed.count(key), "config: ", where, key, ": unknown key",
             where.empty() ? str(" for model '", model, "'") : std::string());
}

void positive(int64_t v, const char* key) { KS_CHECK(v > 0, "config: ", key, ": must be positive, got ", v); }
void at_most(int64_t v, int64_t most, const char* key) {
  KS_CHECK(v <= most, "config: ", key, ": at most ", most, ", got ", v);
}

nn::AttentionConfig parse_attention(const json& j, const ModelConfig& m) {
  KS_CHECK(j.is_object(), "config: attention: expected an object, got ", nn::json_excerpt(j));
  reject_unknown(j, {"type", "heads", "head_dim", "keys", "hard_e", "soft_e", "sigma2", "sigma2_keys", "learn_pi",
                     "pi_momentum", "shift_init", "dropout", "bias"},
                 "attention.", m.model);
  nn::AttentionConfig a;
  read(j, "type", a.type, "attention.");
  read(j, "heads", a.heads, "attention.");
  if (j.contains("head_dim") && j.at("head_dim").is_string()) {
    KS_CHECK(j.at("head_dim") == "seq", "config: attention.head_dim: expected an integer or \"seq\", got ",
             nn::json_excerpt(j.at("head_dim")));
    a.head_dim = m.max_len;
  } else {
    read(j, "head_dim", a.head_dim, "attention.");
  }
  read(j, "keys", a.keys, "attention.");
  read(j, "hard_e", a.hard_e, "attention.");
  read(j, "soft_e", a.soft_e, "attention.");
  read(j, "sigma2", a.sigma2, "attention.");
  if (j.contains("sigma2_keys")) {
    const json& v = j.at("sigma2_keys");
    KS_CHECK(v.is_array(), "config: attention.sigma2_keys: expected an array of numbers, got ", nn::json_excerpt(v));
    for (const json& x : v) {
      KS_CHECK(x.is_number(), "config: attention.sigma2_keys: expected numbers, got ", nn::json_excerpt(x));
      a.sigma2_keys.push_back(x.get<double>());
    }
  }
  read(j, "learn_pi", a.learn_pi, "attention.");
  read(j, "pi_momentum", a.pi_momentum, "attention.");
  read(j, "shift_init", a.shift_init, "attention.");
  read(j, "dropout", a.dropout, "attention.");
  read(j, "bias", a.bias, "attention.");
  a.d_model = m.d_model;
  try {
    a.validate();
  } catch (const Error& e) {
    throw Error(str("config: ", e.what()));
  }
  return a;
}

}  // namespace

ModelConfig parse_model_config(const json& j) {
  KS_CHECK(j.is_object(), "config: expected a JSON object, got ", nn::json_excerpt(j));
  ModelConfig m;
  read(j, "model", m.model);
  const std::set<std::string> common = {"model",   "d_model",    "d_ff",      "max_len",  "dropout",
                                        "pre_norm", "activation", "positions", "attention"};
  std::set<std::string> allowed = common;
  if (m.model == "decoder_lm") allowed.insert({"layers", "vocab_size", "tie_embeddings", "tied_lookup_reversed", "pad_id"});
  else if (m.model == "encoder_classifier")
    allowed.insert({"layers", "vocab_size", "pad_id", "num_classes", "pooling", "dual"});
  else if (m.model == "seq2seq") {
    allowed.insert({"src_vocab_size", "tgt_vocab_size", "encoder_layers", "decoder_layers", "share_embeddings",
                    "tied_lookup_reversed",
                    "label_smoothing", "pad_id", "bos_id", "eos_id"});
    m.pre_norm = false;
    m.positions = "sinusoidal";
    m.pad_id = 0;
  } else {
    throw Error(str("config: model: unknown model '", m.model, "' (expected decoder_lm, encoder_classifier or seq2seq)"));
  }
  reject_unknown(j, allowed, "", m.model);

  read(j, "d_model", m.d_model);
  read(j, "d_ff", m.d_ff);
  read(j, "layers", m.layers);
  read(j, "max_len", m.max_len);
  read(j, "dropout", m.dropout);
  read(j, "pre_norm", m.pre_norm);
  std::string act = m.activation == nn::Activation::GELU ? "gelu" : "relu";
  read(j, "activation", act);
  try {
    m.activation = nn::parse_activation(act);
  } catch (const Error& e) {
    throw Error(str("config: activation: ", e.what()));
  }
  read(j, "positions", m.positions);
  read(j, "vocab_size", m.vocab_size);
  read(j, "tie_embeddings", m.tie_embeddings);
  read(j, "tied_lookup_reversed", m.tied_lookup_reversed);
  read(j, "pad_id", m.pad_id);
  read(j, "num_classes", m.num_classes);
  read(j, "pooling", m.pooling);
  read(j, "dual", m.dual);
  read(j, "src_vocab_size", m.src_vocab_size);
  read(j, "tgt_vocab_size", m.tgt_vocab_size);
  read(j, "encoder_layers", m.encoder_layers);
  read(j, "decoder_layers", m.decoder_layers);
  read(j, "share_embeddings", m.share_embeddings);
  read(j, "label_smoothing", m.label_smoothing);
  read(j, "bos_id", m.bos_id);
  read(j, "eos_id", m.eos_id);

  positive(m.d_model, "d_model");
  at_most(m.d_model, kMaxWidth, "d_model");
  KS_CHECK(m.d_ff >= 0, "config: d_ff: must be >= 0 (0 means 4 * d_model), got ", m.d_ff);
  at_most(m.d_ff, 64 * kMaxWidth, "d_ff");
  positive(m.max_len, "max_len");
  at_most(m.max_len, kMaxLength, "max_len");
  for (auto [v, key] : {std::pair{m.vocab_size, "vocab_size"}, {m.src_vocab_size, "src_vocab_size"},
                        {m.tgt_vocab_size, "tgt_vocab_size"}, {m.num_classes, "num_classes"}})
    at_most(v, kMaxVocabSize, key);
  for (auto [v, key] : {std::pair{m.layers, "layers"}, {m.encoder_layers, "encoder_layers"},
                        {m.decoder_layers, "decoder_layers"}})
    at_most(v, kMaxLayers, key);
  KS_CHECK(m.dropout >= 0 && m.dropout < 1, "config: dropout: must be in [0, 1), got ", m.dropout);
  KS_CHECK(m.positions == "learned" || m.positions == "sinusoidal",
           "config: positions: expected learned or sinusoidal, got '", m.positions, "'");
  if (m.model == "seq2seq") {
    positive(m.src_vocab_size, "src_vocab_size");
    positive(m.tgt_vocab_size, "tgt_vocab_size");
    positive(m.encoder_layers, "encoder_layers");
    positive(m.decoder_layers, "decoder_layers");
    KS_CHECK(!m.share_embeddings || m.src_vocab_size == m.tgt_vocab_size,
             "config: share_embeddings: needs src_vocab_size == tgt_vocab_size (", m.src_vocab_size, " vs ",
             m.tgt_vocab_size, ")");
    KS_CHECK(m.label_smoothing >= 0 && m.label_smoothing < 1, "config: label_smoothing: must be in [0, 1), got ",
             m.label_smoothing);
    for (auto [id, key] : {std::pair{m.pad_id, "pad_id"}, {m.bos_id, "bos_id"}, {m.eos_id, "eos_id"}})
      KS_CHECK(id >= 0 && id < m.tgt_vocab_size, "config: ", key, ": must be a token id in [0, ", m.tgt_vocab_size,
               "), got ", id);
  } else {
    positive(m.vocab_size, "vocab_size");
    positive(m.layers, "layers");
    KS_CHECK(m.pad_id < m.vocab_size, "config: pad_id: ", m.pad_id, " is not below vocab_size ", m.vocab_size);
  }
  if (m.model == "encoder_classifier") {
    KS_CHECK(m.num_classes >= 2, "config: num_classes: need at least 2 classes, got ", m.num_classes);
    KS_CHECK(m.pooling == "mean" || m.pooling == "cls", "config: pooling: expected mean or cls, got '", m.pooling, "'");
  }
  m.attention = parse_attention(j.contains("attention") ? j.at("attention") : json::object(), m);
  return m;
}

nlohmann::json ModelConfig::to_json() const {
  json a = {{"type", attention.type},   {"heads", attention.heads},   {"head_dim", attention.resolved_head_dim()},
            {"keys", attention.keys},   {"hard_e", attention.hard_e}, {"soft_e", attention.soft_e},
            {"sigma2", attention.sigma2}, {"sigma2_keys", attention.sigma2_keys}, {"learn_pi", attention.learn_pi},
            {"pi_momentum", attention.pi_momentum},
            {"shift_init", attention.shift_init}, {"dropout", attention.dropout}, {"bias", attention.bias}};
  json j = {{"model", model},       {"d_model", d_model},   {"d_ff", resolved_d_ff()},
            {"max_len", max_len},   {"dropout", dropout},   {"pre_norm", pre_norm},
            {"activation", activation == nn::Activation::GELU ? "gelu" : "relu"},
            {"positions", positions}, {"attention", a}};
  if (model == "seq2seq") {
    j.update({{"src_vocab_size", src_vocab_size}, {"tgt_vocab_size", tgt_vocab_size},
              {"encoder_layers", encoder_layers}, {"decoder_layers", decoder_layers},
              {"share_embeddings", share_embeddings}, {"tied_lookup_reversed", tied_lookup_reversed},
              {"label_smoothing", label_smoothing},
              {"pad_id", pad_id}, {"bos_id", bos_id}, {"eos_id", eos_id}});
  } else {
    j.update({{"layers", layers}, {"vocab_size", vocab_size}, {"pad_id", pad_id}});
    if (model == "decoder_lm") j.update({{"tie_embeddings", tie_embeddings}, {"tied_lookup_reversed", tied_lookup_reversed}});
    else j.update({{"num_classes", num_classes}, {"pooling", pooling}, {"dual", dual}});
  }
  return j;
}

}  // namespace ks::models
