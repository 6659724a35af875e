// tools/trainer.h — the training loop behind `keystone train`: data, model,
// optimizer and schedule built from a config; a live progress line;
// periodic evaluation; metrics.jsonl; latest and best checkpoints; a clean
// stop on Ctrl-C (SIGINT) or SIGTERM that saves first; and resuming.
//
// Resuming is exact: a checkpoint holds the parameters, the optimizer state,
// the loader's position, the dropout generator's state and the partial sums
// of the current log interval, and the schedule is a pure function of the
// step. So a run stopped at any step and resumed writes the same losses as
// one that never stopped (tests/tools/test_trainer.cpp checks this).
//
// The best checkpoint is the one with the lowest validation loss. After the
// last step the test split is evaluated with it.
// Not here: the folder layout and loading runs (tools/run_dir.h), the
// command-line flags (tools/train.cpp), how a model computes its loss
// (tools/task.h).
#pragma once

#include <atomic>
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>

#include "datasets/loader.h"
#include "models/model.h"
#include "nn/optim.h"
#include "tools/data_setup.h"
#include "tools/run_dir.h"
#include "tools/task.h"

namespace ks::tools {

// Asks a running Trainer to save and stop after its current step. Safe to
// call from a signal handler or another thread.
void request_training_stop();

// While alive, SIGINT and SIGTERM call request_training_stop(); a second
// signal stops the process at once (the last checkpoint stays intact).
class StopSignalScope {
 public:
  StopSignalScope();
  ~StopSignalScope();
  StopSignalScope(const StopSignalScope&) = delete;
  StopSignalScope& operator=(const StopSignalScope&) = delete;
};

struct TrainerOptions {
  std::filesystem::path run_dir;
  bool resume = false;
  bool progress = true;  // the live progress line (stderr); tests turn it off
  // Called after every optimizer step with the step and its loss (tests).
  std::function<void(int64_t step, double loss)> on_step{};
};

enum class TrainOutcome { Finished, Stopped };

class Trainer {
 public:
  // Builds data, model and optimizer. With options.resume, `config` must be
  // the run's own config.json (train.* keys may differ) and the latest
  // checkpoint is loaded; without it, run_dir must not hold a run already.
  Trainer(const TrainConfig& config, TrainerOptions options);
  ~Trainer();

  TrainOutcome run();

  int64_t step() const { return step_; }
  const RunPaths& paths() const { return paths_; }
  const TrainConfig& config() const { return config_; }
  // The last evaluation of each split (empty when none ran).
  const nlohmann::json& last_valid() const { return last_valid_; }
  const nlohmann::json& last_test() const { return last_test_; }

 private:
  void build(bool resume);
  void restore_from_latest();
  void evaluate_valid();
  void evaluate_test_with_best();
  void save(const std::filesystem::path& path);
  void log_train_record();
  void append_metrics(nlohmann::json record);
  void print_progress(bool force);
  void print_summary() const;

  TrainConfig config_;
  TrainerOptions options_;
  RunPaths paths_;
  data::Splits splits_;
  Device device_ = Device::cpu();  // train.device: the model, its optimizer state and each batch live there
  std::shared_ptr<models::Model> model_;
  std::unique_ptr<nn::Optimizer> optimizer_;
  std::unique_ptr<data::DataLoader> loader_;

  int64_t step_ = 0;
  double best_loss_ = 0;  // valid loss of best.safetensors; meaningful when best_step_ > 0
  int64_t best_step_ = 0;
  // The current log interval: sums since the last train record.
  double interval_loss_ = 0;
  int64_t interval_steps_ = 0, interval_tokens_ = 0;
  double elapsed_before_ = 0;  // seconds of earlier sessions of this run
  double session_start_ = 0, interval_start_ = 0, last_print_ = -1e9;
  int64_t session_first_step_ = 0;
  double shown_loss_ = -1;  // smoothed loss for the progress line only
  double shown_rate_ = -1;  // tokens/s of the last train record, for the progress line
  nlohmann::json last_valid_, last_test_;
};

}  // namespace ks::tools
