// models/encoder_classifier.h — the Transformer encoder classifier
// ("encoder_classifier"), as used for the LRA tasks.
//
//   tokens (B, T) -> Embedding (pad_id as padding_idx)   [cls: a learned vector prepended]
//     + positions (learned or sinusoidal, or rope inside attention; the [CLS] vector takes position 0)
//     -> config.layers × nn::EncoderLayer (keys equal to pad_id masked out)
//     -> final norm (pre-LN only)
//     -> pooling: "mean" over the non-padding positions, or "cls" (the output at position 0)
//     -> head: Linear(d, C), or with config.head "mlp" (the LRA code's)
//        Linear(d, d_ff) -> ReLU -> Linear(d_ff, C)  -> logits (B, C)
//
// The dual form (config.dual, LRA "Retrieval"): two documents go through the
// same encoder and pooling to u and v (B, d); [u, v, |u − v|, u ∗ v] (B, 4d)
// -> Linear(4d, 2d) -> activation (config.activation) -> Linear(2d, C).
// Not here: the training loop, tokenisation.
#pragma once

#include <memory>

#include "models/model.h"
#include "models/shared.h"
#include "nn/container.h"
#include "nn/transformer.h"

namespace ks::models {

class EncoderClassifier : public Model {
 public:
  explicit EncoderClassifier(const ModelConfig& cfg);

  // tokens int64 (B, T) -> logits (B, C). Not for a dual model.
  Tensor forward(const Tensor& tokens);
  // Dual models only: a (B, Ta) and b (B, Tb) int64 -> logits (B, C).
  Tensor forward(const Tensor& a, const Tensor& b);
  // tokens int64 (B, T) -> the pooled encoding (B, d).
  Tensor encode(const Tensor& tokens);
  // Model's batch method: forward(tokens) (B, C) against labels (B); the
  // training loss is Model's default, their mean cross-entropy. Not for a
  // dual model (forward(tokens) says so).
  Predictions predict(const Batch& batch) override;

  // Per input token: every Linear 2·in·out and attention by nn::attention_cost
  // (not causal) at the positions the encoder sees (seq_len, plus one for
  // [CLS]); the head runs once per sequence (dual: once per pair of two
  // sequences) and is spread over its tokens. Embedding lookups, position
  // adds, layer norms, activations, residual adds and pooling are not counted.
  // embedding_params: the token and learned position tables and the [CLS] vector.
  ModelCost cost(int64_t seq_len) const override;

  std::shared_ptr<nn::Embedding> tok;
  PositionTable pos;
  Tensor cls;  // (d), pooling "cls" only
  std::shared_ptr<nn::ModuleList<nn::EncoderLayer>> layers;
  std::shared_ptr<nn::Norm> ln_f;      // pre-LN only
  std::shared_ptr<nn::Linear> hidden;  // dual: 4d -> 2d; head "mlp": d -> d_ff; else none
  std::shared_ptr<nn::Linear> head;    // d (dual: 2d, mlp: d_ff) -> C
};

}  // namespace ks::models
