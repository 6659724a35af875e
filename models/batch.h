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
// A language model's targets hold kNoTarget where a position predicts
// nothing (past each row's end): padding is never scored, whether or not
// the model has a padding id (an imported GPT-2's id 0 is a real token).
// Not here: padding masks, example indices, the loader's position.
#pragma once

#include "core/tensor.h"

namespace ks::models {

// A target that asks for no prediction: PyTorch's ignore_index default.
inline constexpr int64_t kNoTarget = -100;

struct Batch {
  Tensor tokens{};         // (B, T) int64: the input; seq2seq: the source
  Tensor decoder_input{};  // (B, S) int64, seq2seq only: bos + target (teacher forcing)
  Tensor targets{};        // (B, T) int64 (language model): what each position predicts, kNoTarget
                           // past each row's end; (B, S) (seq2seq): pad_id past each row's end
  Tensor labels{};         // (B) int64, classification only
};

// One row per prediction a batch asks of a model, with what it should have
// predicted: evaluation scores these (cross-entropy, argmax accuracy).
struct Predictions {
  Tensor logits;                     // (N, C)
  Tensor targets;                    // (N) int64
  int64_t ignore_index = kNoTarget;  // rows whose target is this are no prediction (padding)
};

}  // namespace ks::models
