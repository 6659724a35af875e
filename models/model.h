// models/model.h — what every model shares: its config, its cost report, and
// the registry that builds a model from a config by name.
//
// Each model family (decoder_lm, encoder_classifier, seq2seq) registers itself
// from its own source file with KS_REGISTER_MODEL, so build_model needs no
// list of families and adding one edits no shared file.
#pragma once

#include <memory>
#include <string>

#include "models/config.h"
#include "core/dispatch.h"
#include "nn/module.h"

namespace ks::models {

// Parameters and forward FLOPs per token (2 per multiply-add), for comparing
// configs as the papers do; embeddings counted separately since papers differ
// on whether to include them.
struct ModelCost {
  int64_t params = 0;             // every trainable parameter
  int64_t embedding_params = 0;   // token and position tables (included in params)
  double flops_per_token = 0;     // one forward pass, at sequence length seq_len
  // The decoding cache of one sequence of seq_len positions (float32, every
  // layer; seq2seq: its decoder's self-attention and the projected encoder
  // memory its cross-attention keeps); 0 for a model that does not decode.
  double kv_cache_bytes = 0;
};

class Model : public nn::Module {
 public:
  Model(ModelConfig cfg, const std::string& type_name) : Module(type_name), config(std::move(cfg)) {}
  // Cost at sequence length seq_len (seq2seq: source and target both seq_len).
  virtual ModelCost cost(int64_t seq_len) const = 0;
  const ModelConfig config;
};

using ModelFactory = std::shared_ptr<Model> (*)(const ModelConfig&);
bool register_model(const std::string& name, ModelFactory factory);
std::shared_ptr<Model> build_model(const ModelConfig& cfg);

}  // namespace ks::models

#define KS_REGISTER_MODEL(name, factory)                                  \
  static const bool KS_CONCAT(ks_model_registered_, __LINE__) =          \
      ::ks::models::register_model(name, factory)
