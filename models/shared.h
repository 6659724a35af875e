// models/shared.h — what the decoder LM and the encoder classifier share (and seq2seq, its layer config):
// the checks of their keys (vocab_size, layers, pad_id), checking a token batch, the position table chosen by
// config.positions (learned parameters, a fixed sinusoidal buffer, or none), and the layer config their Transformer
// layers are built from (with what the positions kind sets on self-attention).
//
// Not here: the token Embedding itself (nn::Embedding), the models.
#pragma once

#include <memory>
#include <vector>

#include "models/config.h"
#include "nn/feed_forward.h"
#include "nn/positions/tables.h"
#include "nn/transformer.h"

namespace ks::models {

// Throws "config: <prefix><key>: ..." unless vocab_size and layers are
// positive and pad_id (< 0: none) is below vocab_size.
void check_token_model_keys(const ModelConfig& m, const std::string& prefix);

// d_model, d_ff, dropout, activation, pre_norm, attention, ff, norm and bias from the model config.
nn::LayerConfig layer_config(const ModelConfig& cfg);

// Throws "<who>: ..." unless tokens is int64 (B, T) with B, T >= 1, every id
// in [0, vocab_size), and positions offset .. offset + T - 1 fit max_len.
void check_tokens(const Tensor& tokens, int64_t vocab_size, int64_t max_len, int64_t offset, const char* who);

// The table config.positions adds to the token embeddings (nn/positions/):
// its module registered on `owner` as "pos" (nn::LearnedPositions, parameter
// "pos.weight"; nn::SinusoidalPositions, buffer "pos.table"), or nothing for a
// kind that acts inside attention (rope).
class PositionTable {
 public:
  PositionTable(nn::Module& owner, const ModelConfig& cfg);
  // x (B, T, d) -> x + P[offset : offset + T]; x itself without a table.
  Tensor add(const Tensor& x, int64_t offset = 0) const;
  // Row by row (left-padded batches, models/decoder_lm.h LeftPadding): row b
  // of x (B, T, d) plus P[starts[b] + t] wherever starts[b] + t >= 0; the
  // slots before position 0 (the pads) unchanged. Each row's sum is the one
  // add(row, starts[b]) forms, bit for bit.
  Tensor add(const Tensor& x, const std::vector<int64_t>& starts) const;
  int64_t num_parameters() const;
  // Redraws a learned table from N(0, std²); a sinusoidal one is fixed and kept.
  void init_normal(double std);

 private:
  std::shared_ptr<const nn::Positions> kind_;
  std::shared_ptr<nn::Module> table_;  // null: no table
};

}  // namespace ks::models
