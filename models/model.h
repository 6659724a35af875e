// models/model.h — what every model shares: its config, its cost report, what
// it does with a batch (its training loss and its predictions), and the
// registry that builds a model from a config by name.
//
// Each model kind (decoder_lm, encoder_classifier, seq2seq) registers its
// descriptor (models/kind.h: keys, checks, factory, the data it trains on)
// from its own source file with KS_REGISTER_MODEL and implements the virtual
// methods below, so build_model, training, evaluation and analysis (tools/)
// need no list of kinds: they call these methods on any Model. A kind defined
// in a test file alone trains and evaluates through tools/train/task.h
// (tests/tools/test_model_kind.cpp), and one in a plugin through `keystone
// train --plugin` (tests/tools/plugins/scaled_lm.cpp); models/README.md lists
// the steps of adding a kind.
//
// Not here: decoding. That is a capability of particular kinds, and the
// tools that decode ask for it by type: `keystone generate` needs a
// DecoderLM (generate), `keystone translate` and evaluate's decodes a
// Seq2Seq (greedy_decode, beam_search).
#pragma once

#include <memory>
#include <string>

#include "core/dispatch.h"
#include "models/batch.h"
#include "models/config.h"
#include "models/kind.h"
#include "nn/module.h"

namespace ks::models {

// Parameters and forward FLOPs per token (2 per multiply-add), for comparing
// configs as the papers do; embeddings counted separately since papers differ
// on whether to include them.
struct ModelCost {
  int64_t params = 0;            // every trainable parameter
  int64_t embedding_params = 0;  // token and position tables (included in params)
  double flops_per_token = 0;    // one forward pass, at sequence length seq_len
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

  // The forward pass of a batch (models/batch.h) as one row of logits per
  // prediction, with its target: what evaluation scores and what attention
  // analysis runs to record the weights. Reads the fields of the kind's task.
  virtual Predictions predict(const Batch& batch) = 0;
  // The mean training loss of a batch (0-dim, with a graph for backward).
  // By default the mean cross-entropy of predict(batch) over the rows not
  // ignored; a kind overrides it for another objective (label smoothing) or
  // for its own checks of the batch.
  virtual Tensor loss(const Batch& batch);

  const ModelConfig config;
};

// Builds the model of cfg.model's kind (models/kind.h); throws for a name
// nobody registered.
std::shared_ptr<Model> build_model(const ModelConfig& cfg);

// `p` with every kNoTarget target (a language model's padding, models/batch.h)
// turned into p.ignore_index, so that a kind which names its own ignore
// index (its pad_id, as kinds written before kNoTarget do) never scores
// padding. What the default loss and evaluation score.
Predictions no_targets_ignored(Predictions p);

}  // namespace ks::models
