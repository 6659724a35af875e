// models/batch.h — what a model sees of a batch: the token tensors its
// forward pass and its loss read, and nothing of how they were loaded.
//
// The data loader's batch (datasets/loader.h) sits in a layer above models,
// so the tools copy its tensor handles into this one (tools/train/task.h
// model_batch). Which fields are defined depends on the task:
//   language model:  tokens, targets
//   classification:  tokens, labels
//   seq2seq:         tokens (source), decoder_input, targets
// Padding is pad_id in the token tensors; each model masks it itself.
// Not here: padding masks, example indices, the loader's position.
#pragma once

#include "core/tensor.h"

namespace ks::models {

struct Batch {
  Tensor tokens{};         // (B, T) int64: the input; seq2seq: the source
  Tensor decoder_input{};  // (B, S) int64, seq2seq only: bos + target (teacher forcing)
  Tensor targets{};        // (B, T) int64 (language model) or (B, S) (seq2seq): what each position
                           // predicts, pad_id past each row's end
  Tensor labels{};         // (B) int64, classification only
};

// One row per prediction a batch asks of a model, with what it should have
// predicted: evaluation scores these (cross-entropy, argmax accuracy).
struct Predictions {
  Tensor logits;                // (N, C)
  Tensor targets;               // (N) int64
  int64_t ignore_index = -100;  // rows whose target is this are no prediction (padding)
};

}  // namespace ks::models
