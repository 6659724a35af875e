// models/config.cpp — strict JSON parsing of model configs, and the table of
// their keys.
#include "models/config.h"

#include <algorithm>

#include "nn/user_input.h"

namespace ks::models {

std::string nearest_key(const std::string& key, const std::vector<std::string>& known) {
  // The optimal string alignment distance: insertions, deletions,
  // substitutions and swaps of neighbours ("stpes" is one from "steps").
  auto distance = [](const std::string& a, const std::string& b) {
    std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
    for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
    for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
    for (size_t i = 1; i <= a.size(); ++i)
      for (size_t j = 1; j <= b.size(); ++j) {
        d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
        if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
          d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    return d[a.size()][b.size()];
  };
  if (key.size() > 256) return "";  // no key is that long; spare the quadratic table
  std::string best;
  size_t best_distance = std::max<size_t>(1, key.size() / 3) + 1;  // a near miss: under this
  for (const std::string& k : known) {
    const size_t d = distance(key, k);
    if (d < best_distance) {
      best = k;
      best_distance = d;
    }
  }
  return best;
}

namespace {

using json = nlohmann::json;

// The keys of every family, then each family's own. What each means is
// documented here once; ModelConfig's comments say how the code uses it.
const std::vector<KeyDoc> kEveryModel = {
    {"model", "decoder_lm | encoder_classifier | seq2seq (default: the data set's task)"},
    {"d_model", "the width of every token's vector"},
    {"d_ff", "the feed-forward inner width; 0: 4 * d_model"},
    {"max_len", "the longest sequence, in tokens (the positions table)"},
    {"dropout", "dropout after attention, feed-forward and embeddings, in [0, 1)"},
    {"pre_norm", "layer norm before each sublayer (true) or after it (false, the seq2seq default)"},
    {"activation", "the feed-forward activation: gelu | relu"},
    {"positions", "learned | sinusoidal (the seq2seq default)"},
    {"attention", "the attention of every layer (its keys below)"}};
const std::vector<KeyDoc> kDecoderLM = {
    {"layers", "decoder layers"},
    {"vocab_size", "token ids (the data's vocabulary)"},
    {"tie_embeddings", "the output layer shares the token embedding"},
    {"tied_lookup_reversed", "a tied table's lookups enter with their features reversed (a better first loss)"},
    {"pad_id", "the padding token's id; -1: none"}};
const std::vector<KeyDoc> kEncoderClassifier = {
    {"layers", "encoder layers"},
    {"vocab_size", "token ids (the data's vocabulary)"},
    {"pad_id", "the padding token's id; -1: none"},
    {"num_classes", "the classes the head predicts (the data's)"},
    {"pooling", "mean | cls (a learned [CLS] vector is prepended)"},
    {"dual", "two documents through one shared encoder, [u, v, |u-v|, u*v] to the head"},
    {"head", "linear: Linear(d, C); mlp: Linear(d, d_ff), ReLU, Linear(d_ff, C) (the LRA code's; not with dual)"},
    {"embedding_std",
     "> 0: token and learned position tables drawn from N(0, std^2) (the LRA code's 0.02); "
     "0: N(0, 1)"}};
const std::vector<KeyDoc> kSeq2Seq = {
    {"src_vocab_size", "source token ids (the data's)"},
    {"tgt_vocab_size", "target token ids (the data's)"},
    {"encoder_layers", "encoder layers"},
    {"decoder_layers", "decoder layers"},
    {"share_embeddings", "one table for source, target and output (needs equal vocabularies)"},
    {"tied_lookup_reversed", "a shared table's lookups enter with their features reversed (a better first loss)"},
    {"label_smoothing", "the training loss's label smoothing, in [0, 1)"},
    {"pad_id", "the padding token's id"},
    {"bos_id", "the begin-of-sequence token's id"},
    {"eos_id", "the end-of-sequence token's id"}};
// The attention keys every family has; each family's own follow them
// (attention_keys), from its registration.
const std::vector<KeyDoc> kAttention = {
    {"type", "the attention family: softmax | fixed | linear | mgk | smgk | mlk | ..."},
    {"heads", "attention heads"},
    {"head_dim", "each head's width p; 0: d_model / heads; \"seq\": max_len"},
    {"dropout", "dropout on the attention weights, in [0, 1)"},
    {"bias", "biases in the projections"}};

std::vector<KeyDoc> attention_keys() {
  std::vector<KeyDoc> keys = kAttention;
  for (const nn::OptionKey& k : nn::attention_option_keys()) keys.push_back({k.key, k.doc});
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
  nn::read_json_key(j, "dropout", a.dropout, at);
  nn::read_json_key(j, "bias", a.bias, at);
  a = a.at_width(m.d_model);
  a.options = nn::parse_attention_options(j, a.type, at);  // the family's own keys
  try {
    a.validate();
  } catch (const Error& e) {
    throw Error(str("config: ", prefix, e.what()));  // validate names "attention.<key>"
  }
  return a;
}

// A family's own keys, after kEveryModel's; null for an unknown family.
const std::vector<KeyDoc>* family_keys(const std::string& family) {
  if (family == "decoder_lm") return &kDecoderLM;
  if (family == "encoder_classifier") return &kEncoderClassifier;
  if (family == "seq2seq") return &kSeq2Seq;
  return nullptr;
}

const std::vector<KeyDoc>& checked_family_keys(const std::string& family, const std::string& prefix) {
  const std::vector<KeyDoc>* own = family_keys(family);
  if (!own) {
    const std::string near = nearest_key(family, {"decoder_lm", "encoder_classifier", "seq2seq"});
    throw Error(str("config: ", prefix, "model: unknown model '", family,
                    "' (expected decoder_lm, encoder_classifier or seq2seq",
                    near.empty() ? std::string() : str("; did you mean ", near, "?"), ")"));
  }
  return *own;
}

}  // namespace

std::vector<KeyDoc> model_keys(const std::string& family) {
  std::vector<KeyDoc> keys = kEveryModel;
  const std::vector<KeyDoc>& own = checked_family_keys(family, "");
  keys.insert(keys.end(), own.begin(), own.end());
  for (const KeyDoc& k : attention_keys()) keys.push_back({"attention." + k.key, k.doc});
  return keys;
}

ModelConfig parse_model_config(const json& j, const std::string& prefix) {
  const std::string& p = prefix;
  KS_CHECK(j.is_object(), "config: ", p.empty() ? std::string() : p.substr(0, p.size() - 1) + ": ",
           "expected a JSON object, got ", nn::json_excerpt(j));
  ModelConfig m;
  nn::read_json_key(j, "model", m.model, p);
  std::vector<KeyDoc> allowed = kEveryModel;
  const std::vector<KeyDoc>& own = checked_family_keys(m.model, p);
  allowed.insert(allowed.end(), own.begin(), own.end());
  if (m.model == "seq2seq") {
    m.pre_norm = false;
    m.positions = "sinusoidal";
    m.pad_id = 0;
  }
  reject_unknown(j, allowed, p, str(" for model '", m.model, "'"));

  nn::read_json_key(j, "d_model", m.d_model, p);
  nn::read_json_key(j, "d_ff", m.d_ff, p);
  nn::read_json_key(j, "layers", m.layers, p);
  nn::read_json_key(j, "max_len", m.max_len, p);
  nn::read_json_key(j, "dropout", m.dropout, p);
  nn::read_json_key(j, "pre_norm", m.pre_norm, p);
  std::string act = m.activation == nn::Activation::GELU ? "gelu" : "relu";
  nn::read_json_key(j, "activation", act, p);
  try {
    m.activation = nn::parse_activation(act);
  } catch (const Error& e) {
    throw Error(str("config: ", p, "activation: ", e.what()));
  }
  nn::read_json_key(j, "positions", m.positions, p);
  nn::read_json_key(j, "vocab_size", m.vocab_size, p);
  nn::read_json_key(j, "tie_embeddings", m.tie_embeddings, p);
  nn::read_json_key(j, "tied_lookup_reversed", m.tied_lookup_reversed, p);
  nn::read_json_key(j, "pad_id", m.pad_id, p);
  nn::read_json_key(j, "num_classes", m.num_classes, p);
  nn::read_json_key(j, "pooling", m.pooling, p);
  nn::read_json_key(j, "dual", m.dual, p);
  nn::read_json_key(j, "head", m.head, p);
  nn::read_json_key(j, "embedding_std", m.embedding_std, p);
  nn::read_json_key(j, "src_vocab_size", m.src_vocab_size, p);
  nn::read_json_key(j, "tgt_vocab_size", m.tgt_vocab_size, p);
  nn::read_json_key(j, "encoder_layers", m.encoder_layers, p);
  nn::read_json_key(j, "decoder_layers", m.decoder_layers, p);
  nn::read_json_key(j, "share_embeddings", m.share_embeddings, p);
  nn::read_json_key(j, "label_smoothing", m.label_smoothing, p);
  nn::read_json_key(j, "bos_id", m.bos_id, p);
  nn::read_json_key(j, "eos_id", m.eos_id, p);

  auto positive = [&](int64_t v, const char* key) {
    KS_CHECK(v > 0, "config: ", p, key, ": must be positive, got ", v);
  };
  auto at_most = [&](int64_t v, int64_t most, const char* key) {
    KS_CHECK(v <= most, "config: ", p, key, ": at most ", most, ", got ", v);
  };
  positive(m.d_model, "d_model");
  at_most(m.d_model, kMaxWidth, "d_model");
  KS_CHECK(m.d_ff >= 0, "config: ", p, "d_ff: must be >= 0 (0 means 4 * d_model), got ", m.d_ff);
  at_most(m.d_ff, 64 * kMaxWidth, "d_ff");
  positive(m.max_len, "max_len");
  at_most(m.max_len, kMaxLength, "max_len");
  for (auto [v, key] : {std::pair{m.vocab_size, "vocab_size"},
                        {m.src_vocab_size, "src_vocab_size"},
                        {m.tgt_vocab_size, "tgt_vocab_size"},
                        {m.num_classes, "num_classes"}})
    at_most(v, kMaxVocabSize, key);
  for (auto [v, key] :
       {std::pair{m.layers, "layers"}, {m.encoder_layers, "encoder_layers"}, {m.decoder_layers, "decoder_layers"}})
    at_most(v, kMaxLayers, key);
  KS_CHECK(m.dropout >= 0 && m.dropout < 1, "config: ", p, "dropout: must be in [0, 1), got ", m.dropout);
  KS_CHECK(m.positions == "learned" || m.positions == "sinusoidal", "config: ", p,
           "positions: expected learned or sinusoidal, got '", m.positions, "'");
  if (m.model == "seq2seq") {
    positive(m.src_vocab_size, "src_vocab_size");
    positive(m.tgt_vocab_size, "tgt_vocab_size");
    positive(m.encoder_layers, "encoder_layers");
    positive(m.decoder_layers, "decoder_layers");
    KS_CHECK(!m.share_embeddings || m.src_vocab_size == m.tgt_vocab_size, "config: ", p,
             "share_embeddings: needs src_vocab_size == tgt_vocab_size (", m.src_vocab_size, " vs ", m.tgt_vocab_size,
             ")");
    KS_CHECK(m.label_smoothing >= 0 && m.label_smoothing < 1, "config: ", p, "label_smoothing: must be in [0, 1), got ",
             m.label_smoothing);
    for (auto [id, key] : {std::pair{m.pad_id, "pad_id"}, {m.bos_id, "bos_id"}, {m.eos_id, "eos_id"}})
      KS_CHECK(id >= 0 && id < m.tgt_vocab_size, "config: ", p, key, ": must be a token id in [0, ", m.tgt_vocab_size,
               "), got ", id);
  } else {
    positive(m.vocab_size, "vocab_size");
    positive(m.layers, "layers");
    KS_CHECK(m.pad_id < m.vocab_size, "config: ", p, "pad_id: ", m.pad_id, " is not below vocab_size ", m.vocab_size);
  }
  if (m.model == "encoder_classifier") {
    KS_CHECK(m.num_classes >= 2, "config: ", p, "num_classes: need at least 2 classes, got ", m.num_classes);
    KS_CHECK(m.pooling == "mean" || m.pooling == "cls", "config: ", p, "pooling: expected mean or cls, got '",
             m.pooling, "'");
    KS_CHECK(m.head == "linear" || m.head == "mlp", "config: ", p, "head: expected linear or mlp, got '", m.head, "'");
    KS_CHECK(!(m.dual && m.head == "mlp"), "config: ", p,
             "head: mlp is for a single document; a dual model has its own two-layer head");
    KS_CHECK(m.embedding_std >= 0 && m.embedding_std <= 10, "config: ", p, "embedding_std: must be in [0, 10], got ",
             m.embedding_std);
  }
  m.attention = parse_attention(j.contains("attention") ? j.at("attention") : json::object(), m, p);
  return m;
}

nlohmann::json ModelConfig::to_json() const {
  json a = nn::attention_options_json(attention);  // the family's keys, every other family's at its defaults
  a.update({{"type", attention.type},
            {"heads", attention.heads},
            {"head_dim", attention.resolved_head_dim()},
            {"dropout", attention.dropout},
            {"bias", attention.bias}});
  json j = {{"model", model},
            {"d_model", d_model},
            {"d_ff", resolved_d_ff()},
            {"max_len", max_len},
            {"dropout", dropout},
            {"pre_norm", pre_norm},
            {"activation", activation == nn::Activation::GELU ? "gelu" : "relu"},
            {"positions", positions},
            {"attention", a}};
  if (model == "seq2seq") {
    j.update({{"src_vocab_size", src_vocab_size},
              {"tgt_vocab_size", tgt_vocab_size},
              {"encoder_layers", encoder_layers},
              {"decoder_layers", decoder_layers},
              {"share_embeddings", share_embeddings},
              {"tied_lookup_reversed", tied_lookup_reversed},
              {"label_smoothing", label_smoothing},
              {"pad_id", pad_id},
              {"bos_id", bos_id},
              {"eos_id", eos_id}});
  } else {
    j.update({{"layers", layers}, {"vocab_size", vocab_size}, {"pad_id", pad_id}});
    if (model == "decoder_lm")
      j.update({{"tie_embeddings", tie_embeddings}, {"tied_lookup_reversed", tied_lookup_reversed}});
    else
      j.update({{"num_classes", num_classes},
                {"pooling", pooling},
                {"dual", dual},
                {"head", head},
                {"embedding_std", embedding_std}});
  }
  return j;
}

}  // namespace ks::models
