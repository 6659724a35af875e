// tools/train/train_state.h — the training state a checkpoint carries besides the
// parameters and the optimizer: where the run is (step, loader position,
// dropout generator), what it has seen (best validation loss and its step,
// the partial sums of the current log interval, the time spent), as
// string metadata "keystone.<field>" of the safetensors file.
//
// Reading it back checks every field's range: a checkpoint is a file a user
// can damage or edit, and a negative step or interval count, or a best loss
// of NaN, would not crash but silently corrupt what the run logs and keeps
// (a logged loss of -1.37, a best checkpoint never updated again).
// Not here: the loop that uses it (tools/train/trainer.h).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "nn/checkpoint.h"

namespace ks::tools {

struct TrainState {
  int64_t step = 0;                       // optimizer steps done
  std::string loader;                     // data::LoaderState as JSON
  uint64_t rng_seed = 0, rng_offset = 0;  // the dropout generator
  double best_loss = 0;                   // valid loss of best.safetensors; meaningful when best_step > 0
  int64_t best_step = 0;                  // 0: no evaluation yet
  int64_t evals_since_best = 0;           // evaluations after best_step's (train.patience counts them)
  // The current log interval: sums since the last train record.
  double interval_loss = 0;
  double interval_grad_norm = 0;
  int64_t interval_steps = 0, interval_tokens = 0;
  int64_t interval_skipped = 0;  // steps of the interval a loss scaler skipped (their grad norms are not in the sum)
  double elapsed_s = 0;          // wall-clock seconds of all sessions up to the save

  nn::Metadata to_metadata() const;
  // Throws naming `file` and the field when one is missing, not a number, or
  // out of range; the step must lie in [0, max_step] (the train.steps of the
  // run that saved it: a step no run reached would overflow the loop's count).
  static TrainState from_metadata(const nn::Metadata& m, const std::filesystem::path& file, int64_t max_step);
};

}  // namespace ks::tools
