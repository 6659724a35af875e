// tools/trainer.h — the training loop behind `keystone train`: data, model,
// optimizer and schedule built from a config; a summary of what the run will
// see; a live progress line; periodic evaluation; metrics.jsonl; latest and
// best checkpoints; a clean stop on Ctrl-C (SIGINT) or SIGTERM that saves
// first; resuming; gradient accumulation; a wall-clock budget
// (train.max_time) and early stopping (train.patience).
//
// Resuming is exact: a checkpoint holds the parameters, the optimizer state,
// and the training state of tools/train_state.h (loader position, dropout
// generator, partial sums of the current log interval), and the schedule is
// a pure function of the step. So a run stopped at any step and resumed
// writes the same losses as one that never stopped (tests/tools/test_trainer.cpp
// checks this). The one exception is train.max_time: a schedule annealed to
// wall-clock time depends on how fast each session ran.
//
// The folder is locked for the whole run (tools/run_dir.h RunLock). A folder
// whose run stopped before its first checkpoint holds nothing to keep, so a
// new `train` into it, or a --resume of it, starts it afresh.
//
// The best checkpoint is the one with the lowest validation loss. After the
// last step the whole test split is evaluated with it.
// Not here: the folder layout and loading runs (tools/run_dir.h), the
// command-line flags (tools/train.cpp), how a model computes its loss
// (tools/task.h).
#pragma once

#include <atomic>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <nlohmann/json.hpp>

#include "datasets/loader.h"
#include "models/model.h"
#include "nn/optim.h"
#include "tools/data_setup.h"
#include "tools/run_dir.h"
#include "tools/task.h"
#include "tools/train_state.h"

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

  int64_t step() const { return state_.step; }
  const RunPaths& paths() const { return paths_; }
  const TrainConfig& config() const { return config_; }
  // The last evaluation of each split (empty when none ran).
  const nlohmann::json& last_valid() const { return last_valid_; }
  const nlohmann::json& last_test() const { return last_test_; }

 private:
  void build(bool resume);
  void restore_from_latest(const nlohmann::json& config_json);
  void write_run_files(bool resumed);
  bool evaluate_valid();  // true when the valid loss improved
  void evaluate_test_with_best();
  void save(const std::filesystem::path& path);
  void log_train_record();
  void append_metrics(nlohmann::json record);
  void print_progress(bool force);
  void print_start() const;
  void print_summary() const;
  double elapsed() const;
  // The step the schedule is evaluated at: the real step, or further along
  // when train.max_time will end the run before train.steps.
  int64_t schedule_step() const;
  // Why the run must not (or need not) go on; empty when it may.
  std::string finished_reason() const;

  TrainConfig config_;
  TrainerOptions options_;
  RunPaths paths_;
  std::unique_ptr<RunLock> lock_;
  data::Splits splits_;
  Device device_ = Device::cpu();  // train.device: the model, its optimizer state and each batch live there
  std::shared_ptr<models::Model> model_;
  std::unique_ptr<nn::Optimizer> optimizer_;
  std::unique_ptr<data::DataLoader> loader_;
  nn::LRSchedule schedule_;
  std::optional<double> bpb_factor_;  // nats per token -> bits per byte on the train split (LMs with text)

  TrainState state_;  // what a checkpoint carries besides the weights (tools/train_state.h)
  double session_start_ = 0, interval_start_ = 0, last_print_ = -1e9;
  int64_t session_first_step_ = 0;
  double elapsed_before_ = 0;  // seconds of earlier sessions of this run
  double shown_loss_ = -1;  // smoothed loss for the progress line only
  double shown_rate_ = -1;  // tokens/s of the last train record, for the progress line
  nlohmann::json last_valid_, last_test_;
};

}  // namespace ks::tools
