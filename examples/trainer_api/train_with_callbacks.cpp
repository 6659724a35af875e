// examples/trainer_api/train_with_callbacks.cpp — `train_with_callbacks`:
// the loop `keystone train` runs (accumulation, clipping, the schedule,
// evaluation, checkpoints, exact resume, metrics.jsonl), driven from C++
// through the installed trainer (Keystone::keystone_train,
// tools/train/trainer.h), with callbacks that log wherever the program likes
// — here one line per event on stdout. It trains a character LM on a text it
// writes, with activation checkpointing on, for 20 steps, and exits 1 unless
// every callback fired and the validation loss fell below its first value.
// Not here: a loop written by hand (train_lm/), the CLI (`keystone train`).
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tools/train/trainer.h"

namespace fs = std::filesystem;

int main() {
  const fs::path dir = fs::temp_directory_path() / ("ks_trainer_api_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  {
    std::ofstream text(dir / "text.txt");
    for (int i = 0; i < 400; ++i) text << "the quick brown fox jumps over the lazy dog " << i % 7 << "\n";
  }
  // A `keystone train` config, as JSON (keystone config --defaults lists every key).
  nlohmann::json config = {
      {"name", "trainer-api"},
      {"seed", 1},
      {"data",
       {{"dataset", "text"},
        {"train", (dir / "text.txt").string()},
        {"seq_len", 32},
        {"tokenizer", {{"type", "char"}}}}},
      {"model", {{"d_model", 32}, {"layers", 2}, {"dropout", 0.1}, {"attention", {{"type", "softmax"}, {"heads", 4}}}}},
      {"optimizer", {{"lr", 3e-3}}},
      {"train",
       {{"steps", 20},
        {"batch_size", 16},
        {"eval_every", 10},
        {"log_every", 5},
        {"eval_batches", 2},
        {"checkpoint_layers", true}}}};

  int steps = 0, evaluations = 0, checkpoints = 0;
  double first_valid = 0, last_valid = 0;
  ks::tools::TrainerCallbacks callbacks{
      .on_step =
          [&](const ks::tools::StepEvent& e) {
            ++steps;
            if (e.step % 5 == 0)
              std::printf("step %3lld  loss %.4f  lr %.2e  %.0f tokens/s\n", static_cast<long long>(e.step), e.loss,
                          e.lr, e.tokens_per_s);
          },
      .on_evaluation =
          [&](const ks::tools::EvalEvent& e) {
            ++evaluations;
            if (e.split == "valid") (evaluations == 1 ? first_valid : last_valid) = e.loss;
            std::printf("%s at step %lld: loss %.4f%s\n", e.split.c_str(), static_cast<long long>(e.step), e.loss,
                        e.improved ? " (best so far)" : "");
          },
      .on_checkpoint =
          [&](const ks::tools::CheckpointEvent& e) {
            ++checkpoints;
            std::printf("checkpoint %s\n", e.path.filename().c_str());
          }};
  ks::tools::Trainer trainer(ks::tools::parse_train_config(config),
                             {.run_dir = dir / "run", .progress = false, .callbacks = callbacks});
  const bool finished = trainer.run() == ks::tools::TrainOutcome::Finished;
  fs::remove_all(dir);
  const bool ok = finished && steps == 20 && evaluations >= 3 && checkpoints >= 2 && last_valid < first_valid;
  std::printf("train_with_callbacks: %d steps, %d evaluations, %d checkpoints; valid loss %.3f -> %.3f: %s\n", steps,
              evaluations, checkpoints, first_valid, last_valid, ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}
