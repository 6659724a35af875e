// nn/positions/positions.h — how a model tells its tokens' positions apart, as
// descriptors: each kind ("learned", "sinusoidal", "rope", ...) lives in its
// own file beside its math (nn/positions/<kind>.cpp) and registers itself
// (KS_REGISTER_POSITIONS), so adding a kind edits no shared file.
//
// A kind does one or both of:
//   - a table added to the token embeddings (make_table / add_table): the
//     module a model registers as "pos", learned parameters or a fixed buffer;
//   - something set on its layers' self-attention (configure_self_attention):
//     a term inside attention, such as rope_theta (RoPE rotates queries and
//     keys). Cross-attention never takes it: the decoder's queries and the
//     encoder's keys do not share positions (AttentionConfig::cross).
// A kind's own config keys (RoPE's rope_theta) sit in the model section,
// parsed by the kind; another kind's key is refused ("applies to positions
// rope only"), and to_json writes only the kind's own, so the resolved config
// of a kind without keys has exactly the keys it always had.
// Not here: the models that call these (models/shared.h, models/seq2seq.cpp),
// the rope op (ops/rope.h), the attention families.
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

#include "core/dispatch.h"  // KS_CONCAT
#include "nn/attention/attention.h"
#include "nn/module.h"

namespace ks::nn {

// One kind of positions with its options (the parsed descriptor).
class Positions {
 public:
  virtual ~Positions() = default;
  virtual std::string kind() const = 0;
  // The kind's own keys, explicit, as the model section holds them.
  virtual nlohmann::json to_json() const { return nlohmann::json::object(); }
  // The table added to the token embeddings for max_len positions of width
  // d_model, which a model registers as "pos"; null: the kind adds none.
  virtual std::shared_ptr<Module> make_table(int64_t max_len, int64_t d_model) const;
  // x (B, T, d) plus rows offset .. offset + T − 1 of `table` (make_table's).
  virtual Tensor add_table(const Module& table, const Tensor& x, int64_t offset) const;
  // Redraws a learned table from N(0, std²) (encoder_classifier's
  // embedding_std); a fixed table is kept.
  virtual void init_table_normal(Module& table, double std) const;
  // Sets what the kind needs on a self-attention config (rope_theta, ...).
  virtual void configure_self_attention(AttentionConfig&) const {}
};

// A kind whose table is the module Table: Table(max_len, d_model) and
// Table::forward(x, offset) = x + its rows offset .. offset + T − 1.
template <class Table> struct TablePositions : Positions {
  std::shared_ptr<Module> make_table(int64_t max_len, int64_t d_model) const override {
    return std::make_shared<Table>(max_len, d_model);
  }
  Tensor add_table(const Module& table, const Tensor& x, int64_t offset) const override {
    return dynamic_cast<const Table&>(table).forward(x, offset);
  }
};

struct PositionKind {
  std::string doc;           // one line, for the config's key table
  std::vector<KeyDoc> keys;  // the model-section keys parse reads
  // Reads the kind's keys from the model section (absent: defaults); errors
  // "config: <where><key>: ...".
  std::shared_ptr<const Positions> (*parse)(const nlohmann::json& section, const std::string& where);
};
bool register_position_kind(const std::string& name, PositionKind kind);
std::vector<std::string> position_kinds();

// The kind `name` with its options from the model section `section` (where:
// "model." as the config names it). An unknown kind: "config:
// <where>positions: expected learned, rope or sinusoidal, got '...'"; another
// kind's key: "config: <where>rope_theta applies to positions rope only, not
// 'learned'".
std::shared_ptr<const Positions> parse_positions(const std::string& name, const nlohmann::json& section,
                                                 const std::string& where);
// Every kind's keys, each once, its doc prefixed with the kinds that take it.
std::vector<KeyDoc> position_option_keys();

}  // namespace ks::nn

#define KS_REGISTER_POSITIONS(name, ...)                            \
  static const bool KS_CONCAT(ks_positions_registered_, __LINE__) = \
      ::ks::nn::register_position_kind(name, ::ks::nn::PositionKind{__VA_ARGS__})
