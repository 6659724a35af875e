// tools/train/run_config.h — the training config of `keystone train`: one JSON file
// with five sections, every default written here, strictly validated.
//
//   {
//     "name": "copy",                 run name; the default run folder is runs/<name>
//     "seed": 0,                      parameter init, dropout, shuffling
//     "plugins": [],                  shared libraries loaded before the model is read (below)
//     "data":      {"dataset": "seq2seq", "task": "copy", ...}   see tools/train/data_setup.h
//     "model":     {"model": "seq2seq", "d_model": 128, ...}    see models/config.h; sizes
//                                     the data fixes (vocab_size, num_classes, ...) may be left out
//     "optimizer": {"type": "adamw", "lr": 1e-3, "weight_decay": 0.01,
//                   "beta1": 0.9, "beta2": 0.999, "eps": 1e-8,
//                   "momentum": 0.9, "nesterov": false}         (each type's own keys: nn/optim/)
//     "schedule":  {"type": "cosine", "warmup_steps": 0, "min_factor": 0.0, "noam_scale": 1.0}
//     "train":     {"steps": 1000, "batch_size": 32, "accumulate_steps": 1, "eval_every": 200,
//                   "eval_batches": 0, "log_every": 10, "checkpoint_every": 0,
//                   "clip_grad_norm": 1.0, "max_time": 0, "patience": 0, "threads": 0,
//                   "bucket_batches": 0, "prefetch": 4, "device": "cpu",
//                   "precision": "float32", "loss_scale": "none" ("dynamic" with fp16),
//                   "loss_scale_init": 65536, "loss_scale_growth_factor": 2, "loss_scale_backoff_factor": 0.5,
//                   "loss_scale_growth_interval": 2000,
//                   "decode_examples": 100, "ema_decay": 0, "ema_warmup": false,
//                   "freeze": [], "lora": null}     fine-tuning: nn/lora.h
//   }
//
// What each key means is in the tables of run_config.cpp (the optimizer's:
// nn/optim/optimizer_kind.h and each type's file), the ones the
// reader checks keys against (train_config_keys; `keystone config --defaults`
// prints them beside the keys).
//
// `--set key=value` edits the JSON before validation: the key is a dotted
// path ("train.steps", "model.attention.type"), the value JSON when it parses
// as JSON and a string otherwise. The resolved config (every default
// explicit, data sizes filled in) is what a run folder keeps as config.json.
//
// "plugins" lists shared libraries that declare KS_PLUGIN (core/plugin.h):
// parse_train_config loads them (core/plugin_loader.h), so the attention
// families and model kinds they register are names the model section may use.
// The resolved config keeps their absolute paths, so every command that reads
// a run folder's config.json loads them again. `keystone train --plugin FILE` adds to the list.
// Beside them, "plugin_fingerprints" ({path: "fnv1a64:..."}, written by train
// as data.fingerprints are) records each plugin's content; a config that
// records one loads only that content: a plugin replaced or rebuilt since the
// run trained is refused (eval, generate, analyze, --resume), naming both
// hashes, as its code is not what the run was trained with.
// Not here: building data or models (tools/train/data_setup.h, tools/train/task.h).
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "models/config.h"
#include "nn/lora.h"
#include "nn/lr_schedule.h"
#include "nn/optim/optimizer_kind.h"

namespace ks::tools {

inline constexpr int64_t kMaxThreads = 1024;  // train.threads

struct TrainOptions {
  int64_t steps = 1000;          // optimizer steps in the whole run
  int64_t batch_size = 32;       // examples per micro-batch
  int64_t accumulate_steps = 1;  // micro-batches whose gradients one optimizer step sums (each loss
                                 // weighted by its predictions): a batch of batch_size × accumulate_steps
  double max_time = 0;           // > 0: a wall-clock budget in seconds (all sessions of the run); the
                                 // run ends cleanly when it is spent, and the schedule anneals to it
  int64_t patience = 0;          // > 0: stop after this many evaluations without a new best valid loss
  int64_t eval_every = 200;      // steps between evaluations on the valid split (and at the end)
  int64_t eval_batches = 0;      // 0: the whole valid split
  int64_t log_every = 10;        // steps per train record in metrics.jsonl
  int64_t checkpoint_every = 0;  // 0: at every evaluation
  double clip_grad_norm = 1.0;   // 0: no clipping
  int64_t threads = 0;           // 0: KS_NUM_THREADS or the machine's cores
  int64_t bucket_batches = 0;    // > 0: length bucketing (datasets/loader.h)
  int64_t prefetch = 4;          // batches the background loader keeps ready
  std::string device = "cpu";
  std::string precision =
      "float32";  // float32 | tf32 (cuda) | bf16 | fp16 | auto: how GEMMs run (core/matmul_precision.h)
  // train.loss_scale (nn/loss_scaler.h): "dynamic" (the default with fp16), "none" (the default otherwise), or
  // a number, a static scale, read into "static" and static_loss_scale. Parsing resolves the default.
  std::string loss_scale = "none";  // "dynamic" | "none" | "static"
  double static_loss_scale = 0;     // loss_scale "static": the scale
  double loss_scale_init = 65536;   // dynamic: the first scale
  double loss_scale_growth_factor = 2;
  double loss_scale_backoff_factor = 0.5;
  int64_t loss_scale_growth_interval = 2000;
  int64_t decode_examples = 100;   // seq2seq: valid examples greedily decoded per evaluation (exact match)
  bool checkpoint_layers = false;  // recompute each Transformer layer in backward (autograd/checkpoint.h)
  bool detect_anomaly = false;     // anomaly mode: name the op where a NaN/Inf was born (autograd/anomaly.h)
  double ema_decay = 0;            // in (0, 1): keep a moving average of the weights (tools/train/weight_ema.h)
  bool ema_warmup = false;         // the average's decay min(ema_decay, n / (9 + n)) at update n
  // Fine-tuning (nn/lora.h): parameters frozen by name or glob, and LoRA adapters (null: none; with
  // LoRA every base parameter is frozen but lora.train_also's).
  std::vector<std::string> freeze;
  std::optional<nn::LoraOptions> lora;
  // Data-parallel runs (mpirun -np N; tools/train/trainer.h), ignored by one process:
  bool zero = false;                // ZeRO-1: AdamW/SGD state sharded over the ranks (nn/zero.h)
  double bucket_mb = 25;            // gradient all-reduce bucket size (nn/data_parallel.h)
  double collective_timeout = 300;  // seconds a rank waits in a collective before naming the ranks missing
};

struct TrainConfig {
  std::string name = "run";
  uint64_t seed = 0;
  // Absolute paths, each once: what parse_train_config loaded.
  std::vector<std::string> plugins;
  // Each plugin's content hash, by its path (core/plugin_loader.h LoadedPlugin::fingerprint).
  std::map<std::string, std::string> plugin_fingerprints;
  nlohmann::json data;            // the data section, validated by tools/train/data_setup.h
  nlohmann::json model;           // the model section, validated by models/config.h
  nn::OptimizerConfig optimizer;  // nn/optim/optimizer_kind.h
  // schedule.type: constant | cosine | linear | noam (nn/schedules/); total_steps = train.steps,
  // d_model from the model (noam).
  nn::LRSchedule schedule{.type = "cosine"};
  TrainOptions train;
  // What parsing adjusted and the user should hear (not part of the config).
  std::vector<std::string> warnings;

  // Every section with its defaults explicit (model and data as stored).
  nlohmann::json to_json() const;
};

// The largest config file read: real configs are a few KB.
inline constexpr uint64_t kMaxConfigBytes = uint64_t(64) << 20;

// Reads a JSON file (nn/user_input.h: a regular file of at most
// kMaxConfigBytes, nesting at most nn::kMaxJsonDepth); errors name the file
// (missing, not a regular file, too large, not JSON, too deep).
nlohmann::json read_json_file(const std::string& path);
// Applies one "dotted.key=value" override; a malformed one is an error naming it.
void apply_override(nlohmann::json& config, const std::string& assignment);
// Appends plugin paths (`--plugin FILE` flags) to the config's "plugins" list.
void add_plugins(nlohmann::json& config, const std::vector<std::string>& paths);
// Loads the plugins the config lists (errors name the file), then validates
// every section except data and model (left for their builders) and returns
// the config. A run folder's config.json written for a program's own model
// and data (kProgramKey, tools/train/trainer.h) is refused, naming why: it
// does not say how to rebuild them, so no command can evaluate or resume it.
TrainConfig parse_train_config(const nlohmann::json& j);
// The config of a run whose model and data a C++ program brings itself
// (ks::train::Trainer's second constructor): name, seed, optimizer, schedule
// and train, validated as parse_train_config does; "data", "model" and
// "plugins" are refused (the program builds those). The result's data and
// model sections are null; a noam schedule reads schedule.d_model 256 unless
// the program sets it.
TrainConfig parse_loop_config(const nlohmann::json& j);
// The root key of a config.json that the Trainer writes for a program's own
// model and data in place of "data" and "model": what it can say of them
// (the model's type name and parameter count, the task, the split sizes).
inline constexpr const char* kProgramKey = "program";
// The keys parse_train_config reads, with their meanings, by dotted path
// ("name", "train.steps"): the tables it checks them against.
std::vector<KeyDoc> train_config_keys();

}  // namespace ks::tools
