// tools/train/run_dir.h — the run folder that `keystone train` writes and the other
// commands read:
//
//   config.json             the resolved config (every default explicit, data sizes filled in)
//   metrics.jsonl           one JSON record per log/eval event (see tools/figures/plot.h)
//   latest.safetensors      model + optimizer + training state, written at each checkpoint and on Ctrl-C
//   best.safetensors        the same at the lowest validation loss so far
//   tokenizer.json          how text becomes ids (absent for pixel data)
//   target_tokenizer.json   seq2seq only, when the targets have their own tokenizer
//   plot.svg                loss and accuracy curves (keystone plot)
//   .lock                   held (flock) by the one keystone train using the folder, as is the folder
//
// and load_run, which rebuilds the model of a run from its config and loads
// a checkpoint into it, for eval, generate and translate; run_data, which
// rebuilds its splits with its own tokenizers; and the checks that a folder's
// files still belong together (the checkpoint's stored config against
// config.json, its training state in range).
// Not here: the training loop (tools/train/trainer.h).
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "datasets/tokenizer.h"
#include "models/model.h"
#include "nn/checkpoint.h"
#include "tools/train/data_setup.h"
#include "tools/train/run_config.h"

namespace ks::tools {

// The largest metrics.jsonl read (plot, resume): a record per logged step,
// some 200 bytes, is 200 MB at a million steps.
inline constexpr uint64_t kMaxMetricsBytes = uint64_t(1) << 30;

struct RunPaths {
  std::filesystem::path dir;
  std::filesystem::path config() const { return dir / "config.json"; }
  std::filesystem::path metrics() const { return dir / "metrics.jsonl"; }
  std::filesystem::path latest() const { return dir / "latest.safetensors"; }
  std::filesystem::path best() const { return dir / "best.safetensors"; }
  std::filesystem::path tokenizer() const { return dir / "tokenizer.json"; }
  std::filesystem::path target_tokenizer() const { return dir / "target_tokenizer.json"; }
  std::filesystem::path plot() const { return dir / "plot.svg"; }
  std::filesystem::path lock() const { return dir / ".lock"; }
};

// An exclusive lock on a run folder for as long as it lives: a second
// `keystone train` on the same --out (or a --resume of a folder still
// training) fails with an error naming the folder, the lock and the holder's
// pid. The lock is flock(2) on the folder itself (its directory, opened
// read-only), which no one can delete from under a running trainer, and on
// RunPaths::lock() as well (the lock of earlier Keystones, and where the
// holder writes its pid for that message). The kernel drops both when the
// holder dies, however it dies: a kill -9 leaves no stale lock behind.
// Deleting .lock frees nothing (a second trainer had run beside the first,
// 394 steps twice, when .lock alone was the lock). Where the file system
// cannot lock a directory (some network file systems), .lock alone is the
// lock. A .lock that is a symbolic link (whose target the pid would
// overwrite) or not a regular file is refused.
//
// The lock makes the folder, and its missing parents, when it does not
// exist; a folder it made that holds nothing but .lock when the lock is
// released (a run that failed before writing anything: a typo in a model
// key, a wrong data path, a malformed file) is removed again, with the
// parents made for it, so a run that never started leaves nothing behind.
class RunLock {
 public:
  explicit RunLock(const RunPaths& paths);
  ~RunLock();
  RunLock(const RunLock&) = delete;
  RunLock& operator=(const RunLock&) = delete;

 private:
  void release();  // closes both locks, first removing what this lock made if it holds nothing else

  RunPaths paths_;
  int dir_fd_ = -1, fd_ = -1;
  bool held_ = false;  // the folder is this lock's (its flock, or .lock's where folders cannot be locked)
  std::vector<std::filesystem::path> made_;  // the folders this lock made, the run folder first
};

// Deletes the temporary files of writes that a killed process left behind,
// by the exact names Keystone gives them: "<file>.tmp.<pid>" of the folder's
// config, metrics and checkpoints (nn::write_file_atomically),
// "<file>.tmp<pid>" of its tokenizers (data::write_file_atomic) and
// "plot.svg.tmp" (write_plot_svg). Other files, a user's notes.tmp.txt
// included, are left alone. Call with the RunLock held.
void remove_stale_temporaries(const RunPaths& paths);

// A run's stored config (its config.json, or a checkpoint's keystone.config)
// as today's code must read it: a key added after the run was written gets
// the value that reproduces the behaviour it was trained with, where that is
// not the key's new default. Today: every model's models::stored_model_defaults
// (norm, norm_eps, ff, bias as they were before the keys), the model kind's stored_defaults
// (models/kind.h; decoder_lm and seq2seq: tied_lookup_reversed = false, as
// tied lookups were not reversed before the key existed), and plugins = [] (no
// plugins then), so such a checkpoint's config still matches config.json.
void upgrade_stored_config(nlohmann::json& config);

// Dotted paths where two JSON values differ (objects compared key by key;
// "" when the roots themselves differ).
std::vector<std::string> differing_keys(const nlohmann::json& a, const nlohmann::json& b);

// Throws unless the config stored in a checkpoint (metadata "keystone.config",
// when present) equals the folder's config.json in everything but train.*, the
// name and the data files' fingerprints, naming every key that differs: an
// edited config.json would otherwise rebuild a different model (another
// activation or family with the same shapes) or other data around the trained
// weights. Returns the stored config (null when the checkpoint has none).
nlohmann::json check_checkpoint_config(const nn::Metadata& metadata, const nlohmann::json& config_json,
                                       const std::filesystem::path& checkpoint);

// Which weights of a checkpoint load_run puts in the model: the trained ones,
// or their moving average (train.ema_decay; tools/train/weight_ema.h).
enum class Weights { Raw, Ema };

struct LoadedRun {
  RunPaths paths;
  TrainConfig config;                                                  // from config.json
  std::shared_ptr<models::Model> model;                                // in eval mode, weights from the checkpoint
  std::shared_ptr<const data::Tokenizer> tokenizer, target_tokenizer;  // null when the run has none
  std::filesystem::path checkpoint;                                    // the file loaded
  nn::Metadata metadata;                                               // its metadata (step, ...)
  std::string dtype = "float32";  // how the model holds its weights: float32, bf16, fp16 or q8_0
};

// How eval and generate hold a loaded model (their --dtype): in a floating
// type, or float32 with the weight of every Linear and Embedding whose rows
// are a multiple of 32 long in Q8_0 blocks (nn::Q8WeightScope, ops/q8_0.h:
// weight-only int8, llama.cpp's Q8_0). Neither set: as the checkpoint
// stores the weights (a run imported with --dtype bf16 holds bf16 ones).
struct ModelDType {
  std::optional<DType> cast;  // kFloat32, kBFloat16 or kFloat16
  bool q8_0 = false;
};
// --dtype's words: "float32", "bf16", "fp16", "q8_0".
ModelDType parse_model_dtype(const std::string& word);
// A floating type's word among them: "bf16", "fp16", else "float32".
const char* model_dtype_word(DType t);
// The words, for get_choice and --help.
inline const std::vector<std::string> kModelDTypeWords = {"float32", "bf16", "fp16", "q8_0"};

// eval and generate's --device ("cpu" or "cuda"; the word, as read): the
// loaded model moved there; resolve_device's errors (tools/train/task.h: no
// CUDA backend or no GPU), and Q8_0 weights, which run on the CPU only,
// refused by name.
void move_run(LoadedRun& run, const std::string& device_word, const ModelDType& as);

// `checkpoint`: "best" (falling back to latest when a run has no best yet),
// "latest", or a path to a .safetensors file. Errors name the folder or file
// (Weights::Ema: also a checkpoint that holds no moving average). The
// checkpoint's optimizer state is not read (nor its moving average under
// Weights::Raw). `dtype` (eval and generate --dtype): the model is built in
// that type (nn::ParameterDTypeScope) and the checkpoint's floating tensors
// are cast to it one at a time as they are read (nn::load_safetensors), so
// no float32 model is ever held, nor more than one float32 tensor of the
// file; refused, naming the tensor, when a weight does not fit the type
// (fp16 beyond ±65504). `as` unset: a checkpoint whose floating weights are
// all bf16 (or all fp16) is loaded in that type, the others in float32.
// q8_0: the model is built under nn::Q8WeightScope and
// each such weight quantized as it is read (one float32 tensor at a time);
// a LoRA run is refused (merge its adapter first).
LoadedRun load_run(const std::filesystem::path& run_dir, const std::string& checkpoint = "best",
                   Weights weights = Weights::Raw, ModelDType as = {});

// The run's saved tokenizers (null where it has none), checked against its
// resolved data section (tools/train/data_setup.h read_run_tokenizers).
RunTokenizers load_run_tokenizers(const RunPaths& paths, const nlohmann::json& data_section);

// The run's splits, built from its resolved data section with its saved
// tokenizers (tools/train/data_setup.h); warnings are printed to stderr.
TrainingData run_data(const LoadedRun& run);

}  // namespace ks::tools
