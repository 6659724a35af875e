// tools/run_dir.h — the run folder that `keystone train` writes and the other
// commands read:
//
//   config.json             the resolved config (every default explicit, data sizes filled in)
//   metrics.jsonl           one JSON record per log/eval event (see tools/plot.h)
//   latest.safetensors      model + optimizer + training state, written at each checkpoint and on Ctrl-C
//   best.safetensors        the same at the lowest validation loss so far
//   tokenizer.json          how text becomes ids (absent for pixel data)
//   target_tokenizer.json   seq2seq only, when the targets have their own tokenizer
//   plot.svg                loss and accuracy curves (keystone plot)
//
// and load_run, which rebuilds the model of a run from its config and loads
// a checkpoint into it, for eval, generate and translate.
// Not here: the training loop (tools/trainer.h).
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "datasets/tokenizer.h"
#include "models/model.h"
#include "nn/checkpoint.h"
#include "tools/run_config.h"

namespace ks::tools {

struct RunPaths {
  std::filesystem::path dir;
  std::filesystem::path config() const { return dir / "config.json"; }
  std::filesystem::path metrics() const { return dir / "metrics.jsonl"; }
  std::filesystem::path latest() const { return dir / "latest.safetensors"; }
  std::filesystem::path best() const { return dir / "best.safetensors"; }
  std::filesystem::path tokenizer() const { return dir / "tokenizer.json"; }
  std::filesystem::path target_tokenizer() const { return dir / "target_tokenizer.json"; }
  std::filesystem::path plot() const { return dir / "plot.svg"; }
};

struct LoadedRun {
  RunPaths paths;
  TrainConfig config;                        // from config.json
  std::shared_ptr<models::Model> model;      // in eval mode, weights from the checkpoint
  std::shared_ptr<const data::Tokenizer> tokenizer, target_tokenizer;  // null when the run has none
  std::filesystem::path checkpoint;          // the file loaded
  nn::Metadata metadata;                     // its metadata (step, ...)
};

// `checkpoint`: "best" (falling back to latest when a run has no best yet),
// "latest", or a path to a .safetensors file. Errors name the folder or file.
LoadedRun load_run(const std::filesystem::path& run_dir, const std::string& checkpoint = "best");

}  // namespace ks::tools
