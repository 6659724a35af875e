// models/encoder_classifier.h — the Transformer encoder classifier
// ("encoder_classifier"), as used for the LRA tasks.
//
//   tokens (B, T) -> Embedding (pad_id as padding_idx)   [cls: a learned vector prepended]
//     + positions (learned or sinusoidal, or rope inside attention; the [CLS] vector takes position 0)
//     -> config.layers × nn::EncoderLayer (keys equal to pad_id masked out)
//     -> final norm (pre-LN only)
//     -> pooling: "mean" over the non-padding positions, or "cls" (the output at position 0)
//     -> head: Linear(d, C), or with head "mlp" (EncoderClassifierOptions; the LRA code's)
//        Linear(d, d_ff) -> ReLU -> Linear(d_ff, C)  -> logits (B, C)
//
// The dual form (EncoderClassifierOptions::dual, LRA "Retrieval"): two documents go through the
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

// encoder_classifier's own keys (models/kind.h with_model_options), read
// typed by config.options_as<EncoderClassifierOptions>(); parsed,
// documented and checked in models/encoder_classifier_kind.cpp. The shared
// keys it takes (layers, vocab_size, pad_id) are ModelConfig's.
struct EncoderClassifierOptions : ModelOptions {
  int64_t num_classes = 0;       // required (the data fills it in)
  std::string pooling = "mean";  // mean | cls (a learned [CLS] vector is prepended)
  bool dual = false;             // two documents encoded by one shared encoder, [u, v, |u-v|, u*v] -> head
  std::string head = "linear";   // linear: Linear(d, C); mlp: Linear(d, d_ff) -> ReLU -> Linear(d_ff, C),
                                 // the LRA code's classifier (not with dual, which has its own)
  double embedding_std = 0.0;    // > 0: token and learned position tables drawn from N(0, std²) (the
                                 // LRA code's 0.02); 0: the layers' own N(0, 1)

  static EncoderClassifierOptions parse(const nlohmann::json& section, const std::string& prefix);
  static std::vector<KeyDoc> option_keys();
  nlohmann::json to_json() const override;
  void validate(const ModelConfig& cfg, const std::string& prefix) const override;
};

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
