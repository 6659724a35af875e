// models/shared.cpp — key and token checks, the position table, the layer config.
#include "models/shared.h"

#include <algorithm>

#include "ops/reduce.h"
#include "ops/shape.h"
#include "ops/view.h"

namespace ks::models {

void check_token_model_keys(const ModelConfig& m, const std::string& p) {
  check_positive(m.vocab_size, p, "vocab_size");
  check_positive(m.layers, p, "layers");
  KS_CHECK(m.pad_id < m.vocab_size, "config: ", p, "pad_id: ", m.pad_id, " is not below vocab_size ", m.vocab_size);
}

nn::LayerConfig layer_config(const ModelConfig& cfg) {
  nn::LayerConfig l;
  l.d_model = cfg.d_model;
  l.d_ff = cfg.resolved_d_ff();
  l.dropout = cfg.dropout;
  l.activation = cfg.activation;
  l.pre_norm = cfg.pre_norm;
  l.attention = cfg.attention.at_width(cfg.d_model);
  l.ff = cfg.ff;
  l.ff_bias = cfg.bias;
  l.norm = cfg.norm_config();
  cfg.position_kind()->configure_self_attention(l.attention);  // rope_theta (cross-attention drops it)
  return l;
}

void check_tokens(const Tensor& tokens, int64_t vocab_size, int64_t max_len, int64_t offset, const char* who) {
  KS_CHECK(tokens.defined() && tokens.dtype() == kInt64 && tokens.dim() == 2, who,
           ": tokens must be int64 (B, T), got ", tokens.defined() ? describe(tokens) : std::string("undefined"));
  KS_CHECK(tokens.size(0) > 0 && tokens.size(1) > 0, who, ": tokens must not be empty, got ", describe(tokens));
  const int64_t T = tokens.size(1);
  if (offset == 0)
    KS_CHECK(T <= max_len, who, ": a sequence of ", T, " tokens exceeds max_len ", max_len);
  else
    KS_CHECK(offset + T <= max_len, who, ": ", T, " tokens after ", offset, offset == 1 ? " position" : " positions",
             " exceed max_len ", max_len);
  const int64_t lo = amin(tokens).item<int64_t>(), hi = amax(tokens).item<int64_t>();
  KS_CHECK(lo >= 0 && hi < vocab_size, who, ": token id ", lo < 0 ? lo : hi, " is outside [0, ", vocab_size, ")");
}

PositionTable::PositionTable(nn::Module& owner, const ModelConfig& cfg) : kind_(cfg.position_kind()) {
  if (auto table = kind_->make_table(cfg.max_len, cfg.d_model)) table_ = owner.register_module("pos", table);
}

int64_t PositionTable::num_parameters() const { return table_ ? table_->num_parameters() : 0; }

void PositionTable::init_normal(double std) {
  if (table_) kind_->init_table_normal(*table_, std);
}

Tensor PositionTable::add(const Tensor& x, int64_t offset) const {
  return table_ ? kind_->add_table(*table_, x, offset) : x;
}

Tensor PositionTable::add(const Tensor& x, const std::vector<int64_t>& starts) const {
  KS_CHECK(x.dim() == 3 && int64_t(starts.size()) == x.size(0), "positions: ", starts.size(), " row starts for x ",
           describe(x));
  if (!table_) return x;
  const int64_t T = x.size(1);
  std::vector<Tensor> rows;
  for (int64_t b = 0; b < x.size(0); ++b) {
    const Tensor row = narrow(x, 0, b, 1);                                       // (1, T, d)
    const int64_t pads = std::min(std::max<int64_t>(-starts[size_t(b)], 0), T);  // slots before position 0
    if (pads == T) {
      rows.push_back(row);
      continue;
    }
    Tensor real = kind_->add_table(*table_, narrow(row, 1, pads, T - pads), starts[size_t(b)] + pads);
    rows.push_back(pads > 0 ? cat({narrow(row, 1, 0, pads), real}, 1) : real);
  }
  return cat(rows, 0);
}

}  // namespace ks::models
