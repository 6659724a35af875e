// tools/task.h — what training and evaluation do with a batch, per model
// family: the loss the optimizer minimises, and the metrics reported for a
// split (loss per prediction, perplexity, accuracy and, for seq2seq, exact
// match of greedy decodes).
//
//   decoder_lm          predictions: every non-pad next token
//   encoder_classifier  predictions: one label per sequence
//   seq2seq             predictions: every target token and eos (teacher forcing)
//
// Batches come from the loader on the CPU; evaluate copies each to the
// model's device (model_device), so a model moved to a GPU is evaluated there.
// Not here: the loop, logging or checkpoints (tools/trainer.h).
#pragma once

#include <nlohmann/json.hpp>

#include "datasets/dataset.h"
#include "datasets/loader.h"
#include "models/model.h"

namespace ks::tools {

// The device named by a config or flag ("cpu" or "cuda"), checked: "cuda"
// throws "<what>: cuda: this build has no CUDA backend ..." in a CPU-only
// build and "<what>: cuda: no CUDA device is available ..." where no GPU (or
// driver) is present. `what` names the setting, e.g. "train.device".
Device resolve_device(const std::string& name, const std::string& what);
// Where the model's parameters live (the CPU for a model without any).
Device model_device(const nn::Module& model);

// The mean training loss of one batch (0-dim, with a graph for backward).
Tensor batch_loss(models::Model& model, const data::Batch& batch);

// Tokens the model reads in the batch (non-pad inputs; seq2seq adds the
// decoder's), for tokens/s.
int64_t batch_tokens(const data::Batch& batch);

struct EvalResult {
  double loss = 0;          // mean cross-entropy per prediction, nats (no label smoothing)
  double accuracy = 0;      // argmax == target, over the predictions
  int64_t predictions = 0;
  double exact_match = -1;  // seq2seq: fraction of greedy decodes equal to the target; -1: not measured
  int64_t decoded = 0;
  // {"loss", "accuracy", "predictions"} plus "ppl" for token tasks and "exact_match" when measured.
  nlohmann::json to_json(data::Task task) const;
};

struct EvalOptions {
  int64_t batch_size = 32;
  int64_t max_batches = 0;      // 0: the whole split
  int64_t decode_examples = 0;  // seq2seq: greedily decode the first this many examples
};

// Evaluates `split` in order, without gradients and in eval mode (the
// model's mode is restored afterwards).
EvalResult evaluate(models::Model& model, const data::Dataset& split, const EvalOptions& options);

}  // namespace ks::tools
