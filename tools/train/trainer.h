// tools/train/trainer.h — ks::train::Trainer, the training loop behind
// `keystone train` and the C++ API of the installed library keystone_train
// (Keystone::keystone_train). It trains either
//   - what a config describes: data, model, optimizer and schedule all built
//     from a TrainConfig (parse_train_config, tools/train/run_config.h), as
//     `keystone train` does; or
//   - a program's own model and data: a models::Model (a subclass the program
//     wrote, implementing predict and, if it likes, loss) and data::Splits it
//     filled itself, with a config of the loop alone (parse_loop_config:
//     name, seed, optimizer, schedule, train).
// Either way it does the rest: a summary of what the run will see; a live
// progress line; periodic evaluation; metrics.jsonl; latest and best
// checkpoints; a clean stop on Ctrl-C (SIGINT) or SIGTERM that saves first;
// resuming; gradient accumulation; clipping; the schedule; a wall-clock
// budget (train.max_time) and early stopping (train.patience).
//
//   auto config = ks::train::parse_train_config(json);  // or parse_loop_config(json) with a model and data:
//   ks::train::Trainer trainer(my_model, my_splits, config,
//                              {.run_dir = "runs/mine", .progress = false,
//                               .callbacks = {.on_step = [](const ks::train::StepEvent& e) { ... }}});
//   trainer.run();
//
// Callbacks (TrainerCallbacks) let a program log anywhere: on_step after every
// optimizer step, on_evaluation after every evaluation (valid during the run,
// test with the best checkpoint at its end), on_checkpoint after every
// checkpoint is written. They run on the training thread, on every replica of
// a data-parallel run with the values all replicas agreed on (the checkpoint's
// file is rank 0's); one that throws stops the run with its error.
//
// Resuming is exact: a checkpoint holds the parameters, the optimizer state,
// the training state of tools/train/train_state.h (loader position, dropout
// generator, partial sums of the current log interval), the loss scaler's
// state (train.loss_scale: its scale and counts), and the schedule is
// a pure function of the step. So a run stopped at any step and resumed
// writes the same losses as one that never stopped (tests/tools/test_trainer.cpp,
// tests/train/test_own_model.cpp check this). The one exception is train.max_time: a schedule annealed to
// wall-clock time depends on how fast each session ran.
//
// A program's own model and data: the run folder holds what it holds for a
// config (metrics.jsonl, latest and best checkpoints, plot.svg with write_plot, the splits'
// tokenizers when they have any), but its config.json has, instead of "data",
// "model" and "plugins", a "program" section (kProgramKey) that only names
// them: the model's type name and parameter count, the task and the split
// sizes. Nothing outside the program can rebuild them, so `keystone eval`,
// `generate`, `analyze` and `train --resume` refuse such a folder, saying so
// (parse_train_config). To resume, the program builds the same model class
// and the same data again and passes them with options.resume: the weights,
// optimizer state and loader position come from latest.safetensors, whose
// stored config must then name the same model type, parameter count, task and
// split sizes (an error naming the differing keys otherwise). To evaluate, it
// loads best.safetensors into its model (nn/checkpoint.h load_checkpoint) and
// calls tools/train/task.h evaluate.
//
// The folder is locked for the whole run (tools/train/run_dir.h RunLock), which
// makes a new run's folder and removes it again when the run fails before
// writing anything into it (a bad config, a wrong data path). A folder
// whose run stopped before its first checkpoint holds nothing to keep, so a
// new `train` into it, or a --resume of it, starts it afresh. A --resume of a
// run whose training is over (train.steps reached, its time budget spent, or
// stopped by train.patience, as the checkpoint's clock and counts say) trains
// nothing and leaves the folder as it is; only a run stopped during its final
// test evaluation gets that evaluation. A --resume that changes train.steps
// or train.max_time prints where the schedule now ends and how the learning
// rate moves.
//
// The best checkpoint is the one with the lowest validation loss. After the
// last step the whole test split is evaluated with it.
//
// train.ema_decay keeps a moving average of the weights (tools/train/weight_ema.h),
// updated after every optimizer step, saved in every checkpoint beside the
// weights of its step and resumed with them exactly. Every evaluation scores
// the raw weights and the average: the record gets loss, ppl, ... and
// loss_ema, ppl_ema, ...; the best checkpoint stays the raw weights' lowest
// valid loss, and the test record scores its weights and its average.
//
// Loss scaling (train.loss_scale, nn/loss_scaler.h; on by default with
// train.precision fp16): every micro-batch's loss is multiplied by the scale
// before its backward; after the gradients are summed (over accumulate_steps
// micro-batches, and all-reduced over the replicas) they are unscaled, and
// their norm, which the record logs and clipping uses, is that of the
// unscaled gradients. A non-finite norm (an inf or a NaN in any gradient, on
// any replica: the flag is summed over them) skips the optimizer step and
// the moving-average update; the step still counts (train.steps, the log
// and evaluation intervals, and the schedule, which is a function of the
// step: as PyTorch users call scheduler.step() after a skipped
// scaler.step()). A skipped step's loss is logged with the others; its
// non-finite norm is left out of the record's grad_norm.
//
// Gradient accumulation (train.accumulate_steps) weighs each micro-batch's
// mean loss by its share of the step's predictions (target tokens, labels),
// as data parallelism weighs the ranks, so accumulate_steps micro-batches
// give the gradient of one batch of them all.
//
// Data parallel (`mpirun -np N keystone train ...`, ranks from the
// launcher's environment) is behind one interface, tools/train/replicas.h,
// which a single process implements by doing nothing: every rank builds the
// same model (rank 0's weights are broadcast) and reads its own slice of each
// global batch of N × train.batch_size examples (datasets/loader.h shards).
// Each rank's mean loss is weighted by its share of the global batch's
// predictions, and nn::DistributedDataParallel averages the gradients during
// backward, so a step equals one process's step on the global batch (to
// float32 reduction order). The loss, token counts, stop requests and the
// clock are reduced every step, so all ranks take the same decisions (stop,
// time budget, patience); evaluation is split over the ranks and summed.
// Rank 0 alone writes the run folder and prints; a checkpoint holds every
// rank's dropout stream and (with train.zero) the gathered optimizer state,
// so --resume with the same N continues exactly; another N is refused.
// The class's code is in three files: the loop and the step (trainer.cpp),
// the run folder and resuming (trainer_folder.cpp), what it prints
// (trainer_console.cpp).
//
// Not here: the folder layout and loading runs (tools/train/run_dir.h), the
// command-line flags (tools/cli/train.cpp), how a model computes its loss
// (tools/train/task.h).
#pragma once

#include <atomic>
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>

#include "datasets/loader.h"
#include "models/model.h"
#include "nn/loss_scaler.h"
#include "nn/optim.h"
#include "tools/train/data_setup.h"
#include "tools/train/replicas.h"
#include "tools/train/run_dir.h"
#include "tools/train/task.h"
#include "tools/train/train_schedule.h"
#include "tools/train/train_state.h"
#include "tools/train/weight_ema.h"

namespace ks::train {

// The config the Trainer takes, and its parsers (tools/train/run_config.h),
// under the trainer's namespace, where a program reaches for them.
using tools::parse_loop_config;
using tools::parse_train_config;
using tools::RunPaths;
using tools::TrainConfig;

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

// After an optimizer step: its loss (the mean over the step's predictions, as
// metrics.jsonl's train records average), learning rate and gradient norm
// (before clipping), and how fast it read tokens.
struct StepEvent {
  int64_t step = 0;  // 1 for the first step of a run
  double loss = 0;
  double lr = 0;
  double grad_norm = 0;
  int64_t tokens = 0;       // tokens the step's batches held (over all replicas)
  double tokens_per_s = 0;  // tokens / the step's wall-clock time
  double elapsed_s = 0;     // the run's clock, earlier sessions included
  // With a loss scaler (train.loss_scale): whether an inf or NaN in a gradient
  // skipped this step's update (grad_norm is then that non-finite norm), and
  // the scale after the step. Without one: false and 0.
  bool skipped = false;
  double loss_scale = 0;
};

// After an evaluation: `metrics` is the record metrics.jsonl gets for it (loss,
// ppl, accuracy, ... as tools/train/task.h computes them, without split and step;
// with train.ema_decay also loss_ema, ppl_ema, ...: the moving average's).
struct EvalEvent {
  int64_t step = 0;
  std::string split;  // "valid" (every train.eval_every steps) or "test" (at the end, best checkpoint)
  double loss = 0;
  bool improved = false;  // valid: a new best, whose checkpoint follows
  nlohmann::json metrics;
};

// After a checkpoint is written (the file is complete; a data-parallel run's is rank 0's).
struct CheckpointEvent {
  int64_t step = 0;
  std::filesystem::path path;
  bool best = false;  // best.safetensors (the lowest valid loss so far), else latest.safetensors
};

struct TrainerCallbacks {
  std::function<void(const StepEvent&)> on_step{};
  std::function<void(const EvalEvent&)> on_evaluation{};
  std::function<void(const CheckpointEvent&)> on_checkpoint{};
};

struct TrainerOptions {
  std::filesystem::path run_dir;
  bool resume = false;
  // A run folder whose weights (best, else latest) start this fresh run, and
  // whose tokenizers read its data (fine-tuning; the optimizer starts fresh).
  // The model section must build the same tensors; an error names one that differs.
  std::filesystem::path init_from{};
  bool progress = true;  // the live progress line (stderr); tests turn it off
  TrainerCallbacks callbacks{};
  // Draws the run's curves from its metrics.jsonl into `svg` (the run
  // folder's plot.svg) when training stops or finishes; `keystone train` sets
  // it to tools/figures/plot.h's write_plot_svg. Empty: no plot (the
  // training library draws nothing itself). Called on the lead rank only.
  std::function<void(const std::filesystem::path& run_dir, const std::filesystem::path& svg)> write_plot{};
};

enum class TrainOutcome { Finished, Stopped };

class Trainer {
 public:
  // Builds data, model and optimizer from `config` (parse_train_config). With
  // options.resume, `config` must be the run's own config.json (train.* keys
  // may differ) and the latest checkpoint is loaded; without it, run_dir must
  // not hold a run already.
  Trainer(const TrainConfig& config, TrainerOptions options);
  // Trains the program's own `model` (initialised as it likes; moved to
  // train.device) on its own `splits` (each split non-empty, of one task,
  // its ids in range: data::Dataset::validate), with `config`'s optimizer,
  // schedule and train sections (parse_loop_config; its data and model
  // sections must be null). Evaluation scores model.predict (cross-entropy
  // and accuracy of its logits), training minimises model.loss; a step's
  // predictions (which weigh micro-batches) are its labels, or its targets
  // other than model.config.pad_id (set it where batches hold padding). With
  // options.resume, the same model class and data again (above).
  Trainer(std::shared_ptr<models::Model> model, data::Splits splits, const TrainConfig& config, TrainerOptions options);
  ~Trainer();

  TrainOutcome run();

  int64_t step() const { return state_.step; }
  const RunPaths& paths() const { return paths_; }
  const TrainConfig& config() const { return config_; }
  models::Model& model() { return *model_; }
  // The last evaluation of each split (empty when none ran).
  const nlohmann::json& last_valid() const { return last_valid_; }
  const nlohmann::json& last_test() const { return last_test_; }

 private:
  Trainer(const TrainConfig& config, TrainerOptions options, std::shared_ptr<models::Model> own_model,
          data::Splits own_splits);
  void build(bool resume);
  // The config's data (a resumed run's with its saved tokenizers) into splits_, its model section
  // completed from them; returns the model's config (own_ false).
  models::ModelConfig build_from_config(bool resume);
  // Checks the program's own splits and model (own_ true) and describes them for config.json.
  void check_own_model_and_data();
  // What config.json and each checkpoint's "keystone.config" hold: the config,
  // with a program's own model and data as kProgramKey (tools/train/run_config.h).
  nlohmann::json run_config_json() const;
  // Locks the folder and checks it may hold this run (rank 0); returns whether to resume.
  bool open_folder(bool resume);
  void restore_from_latest(const nlohmann::json& config_json);
  // The checkpoint's moving average into ema_ (or a note that it starts or is dropped).
  void restore_ema(const nn::SafetensorsContent& content, const std::filesystem::path& file);
  // Cuts metrics.jsonl back to the checkpoint's step (rank 0), or leaves it as
  // it is and returns true when the run is finished and holds its test record.
  bool trim_metrics_to_checkpoint();
  void write_run_files(bool resumed);
  bool evaluate_valid();  // true when the valid loss improved
  void evaluate_test_with_best();
  void save(const std::filesystem::path& path);
  void log_train_record();
  // A mixture's windows per source over the current log interval (null for one source).
  nlohmann::json interval_source_windows() const;
  void append_metrics(nlohmann::json record);
  void print_progress(bool force);
  void print_start() const;
  void print_summary() const;
  void draw_plot() const;  // options_.write_plot, where set
  // One optimizer step: forward and backward of every micro-batch, the
  // gradient reduction, clipping `params` and the update.
  StepEvent train_step(const std::vector<Tensor>& params);
  // A step's micro-batches, read before any backward so that each one's
  // weight in the step's mean loss is known.
  struct StepBatches {
    std::vector<data::Batch> batches;  // this replica's, CPU tensors
    std::vector<double> mine, all;     // each one's predictions: this replica's, summed over the replicas
    double total = 0;                  // the step's predictions, all replicas
    int64_t tokens = 0;                // the tokens this replica's batches hold
  };
  StepBatches read_step_batches();
  // Forward and backward of each micro-batch, the losses weighted so that the
  // gradients sum to the step's mean; returns this replica's share of the loss.
  double accumulate_gradients(const StepBatches& step);
  // Clips the gradients of `params` to train.clip_grad_norm; their norm before clipping.
  double clip_gradients(const std::vector<Tensor>& params);
  // With a loss scaler: unscales the gradients, clips them when finite, and
  // returns their norm and whether any replica's holds an inf or a NaN.
  std::pair<double, bool> unscale_and_clip(const std::vector<Tensor>& params);
  // The next train record's sums; a skipped step's non-finite grad_norm is left out of them.
  void add_to_interval(double loss, double grad_norm, int64_t tokens, bool skipped);
  double elapsed() const;
  // The clock every decision uses: elapsed(), or rank 0's in a data-parallel run.
  double clock() const { return replicas_->clock(elapsed()); }
  // The step the schedule is evaluated at: the real step, or further along
  // when train.max_time will end the run before train.steps.
  int64_t schedule_step() const;
  // Why the run must not (or need not) go on at `seconds` on its clock; empty when it may.
  std::string finished_reason(double seconds) const;

  TrainConfig config_;
  TrainerOptions options_;
  bool own_ = false;        // the program's own model and data (the second constructor)
  nlohmann::json program_;  // own_: config.json's kProgramKey section
  RunPaths paths_;
  std::unique_ptr<tools::RunLock> lock_;
  data::Splits splits_;
  Device device_ = Device::cpu();  // train.device: the model, its optimizer state and each batch live there
  std::shared_ptr<models::Model> model_;
  std::unique_ptr<nn::Optimizer> optimizer_;
  std::unique_ptr<data::DataLoader> loader_;
  std::unique_ptr<tools::WeightEma> ema_;   // train.ema_decay > 0: the moving average of the weights
  std::unique_ptr<nn::LossScaler> scaler_;  // train.loss_scale not "none" (nn/loss_scaler.h)
  nn::LRSchedule schedule_;
  std::optional<double> bpb_factor_;  // nats per token -> bits per byte on the train split (LMs with text)

  std::unique_ptr<tools::Replicas> replicas_;  // the processes training this run (one, or mpirun's ranks)
  bool lead_ = true;                           // replicas_->lead(): writes the run folder and prints

  tools::TrainState state_;  // what a checkpoint carries besides the weights (tools/train/train_state.h)
  // A resumed run whose training was over when saved: why (empty otherwise),
  // and whether its test record is written; run() then does only what is left.
  std::string finished_;
  bool test_done_ = false;
  std::string fine_tuning_;  // train.freeze / train.lora: the console's line on what trains (empty: all)
  std::string base_model_;   // the HF folder the weights came from (--init-from an import; fine_tune.h)
  double session_start_ = 0, interval_start_ = 0, last_print_ = -1e9;
  int64_t session_first_step_ = 0;
  double elapsed_before_ = 0;  // seconds of earlier sessions of this run
  double shown_loss_ = -1;     // smoothed loss for the progress line only
  double shown_rate_ = -1;     // tokens/s of the last train record, for the progress line
  double startup_s_ = -1;      // process start to the end of this session's first step (the summary's start-up)
  nlohmann::json last_valid_, last_test_;
};

}  // namespace ks::train
