// tools/train/weight_ema.h — the exponential moving average of a model's
// parameters that train.ema_decay keeps (as timm's ModelEmaV2 and PyTorch's
// torch.optim.swa_utils.AveragedModel with get_ema_multi_avg_fn do):
//
//   ema_0 = the weights before the first step
//   ema_n = d * ema_(n-1) + (1 - d) * w_n       after optimizer step n
//
// with d = train.ema_decay, or with train.ema_warmup d_n = min(decay, n / (9 + n))
// (TensorFlow's ExponentialMovingAverage with num_updates = n - 1: 0.1, 0.18,
// 0.25, ... early on, so the average is not dominated by the random start).
//
// One float32 tensor per parameter, on the parameter's device, updated in
// place (two elementwise passes, no temporaries). Buffers are not averaged:
// they are not trained, and an evaluation with the average uses the model's.
// Every replica of a data-parallel run holds the same weights after each step
// (their gradients are all-reduced, ZeRO gathers its shards), so every
// replica's average is the same without any communication; rank 0 saves it.
//
// In a checkpoint the average is the entries "ema/<parameter name>"
// (nn/checkpoint.h kEmaPrefix) and the metadata "keystone.ema_updates", in
// the same file as the weights they belong to: a crash never leaves weights
// and average of different steps. Not here: when the trainer updates,
// evaluates and saves it (tools/train/trainer.cpp, trainer_folder.cpp); `--weights ema` of eval,
// generate and translate (tools/train/run_dir.h load_run).
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>

#include "nn/checkpoint.h"
#include "nn/module.h"
#include "nn/safetensors.h"

namespace ks::tools {

class WeightEma {
 public:
  // Starts the average at `model`'s parameters as they are now (float32 copies on their devices).
  WeightEma(const nn::Module& model, double decay, bool warmup);

  // The decay of update number n (1 for the first).
  double decay_at(int64_t n) const;
  // After an optimizer step: ema = d * ema + (1 - d) * w for every parameter.
  void update();
  int64_t updates() const { return updates_; }

  // For the checkpoint: the average by parameter name (nn::save_checkpoint's `ema`), and its metadata.
  const nn::NamedTensors& tensors() const { return average_; }
  nn::Metadata metadata() const;
  // The average of a checkpoint, which must hold one entry of each parameter's
  // shape (an error names the file and the entry otherwise); false when it
  // holds none (a run that did not keep one): the average is left as it is.
  // The update count must lie in [0, max_updates].
  bool load(const nn::SafetensorsContent& content, const std::filesystem::path& file, int64_t max_updates);

  // While alive, the model's parameters are the average (no copy: each
  // parameter is pointed at its average's storage and back); for evaluating
  // it, not for training.
  class InModel {
   public:
    explicit InModel(const WeightEma& ema);
    ~InModel();
    InModel(const InModel&) = delete;
    InModel& operator=(const InModel&) = delete;

   private:
    nn::NamedTensors params_;
    std::vector<Tensor> raw_;  // the parameters' own storage, to point them back at
  };

 private:
  double decay_;
  bool warmup_;
  int64_t updates_ = 0;
  nn::NamedTensors params_;   // the live parameters (handles that follow Module::to)
  nn::NamedTensors average_;  // float32, of each parameter's shape and device
};

// `content` with each of `model`'s parameters replaced by its average (every
// other tensor as it is), for loading the average as the model's weights; an
// error names `file` when it holds no average (trained without
// train.ema_decay), or an average that lacks one of the parameters (never a
// mix of averaged and raw weights) or has one the model does not.
nn::SafetensorsContent with_ema_as_weights(nn::SafetensorsContent content, const std::filesystem::path& file,
                                           const nn::Module& model);

// `ema`'s metrics (loss, ppl, accuracy, ...) added to `record` as loss_ema, ppl_ema, ...
void add_ema_metrics(nlohmann::json& record, const nlohmann::json& ema);
// The _ema metrics of `record` without their suffix (empty when it has none), for printing.
nlohmann::json ema_metrics(const nlohmann::json& record);

}  // namespace ks::tools
