// tools/train/fine_tune.h — what `train.freeze` and `train.lora` do to a run's
// model (nn/lora.h holds the mechanism), in one place for train, eval,
// generate and export: a LoRA run's model is its config's model with the
// adapters added, wherever it is rebuilt.
// Not here: the adapters themselves (nn/lora.h), PEFT's files (tools/interop/peft.cpp).
#pragma once

#include <filesystem>
#include <string>

#include "nn/module.h"
#include "tools/train/run_config.h"

namespace ks::tools {

// Adds the LoRA adapters (train.lora) and freezes (train.freeze, then
// LoRA's base) on a model whose base weights are in place. Returns a line for
// the console ("LoRA rank 8 on 48 Linear modules; 294,912 of 124,734,720
// parameters trainable (0.24%)"), empty when neither key is set. The adapters'
// A is drawn from the global generator, B is zero.
std::string apply_fine_tuning(nn::Module& model, const TrainOptions& train);

// The model's weights from a LoRA run's checkpoint with each adapter merged
// into its base (W + alpha/r · B A), for a model without adapters; a run
// without LoRA gives its state as it is. `config_json` is the run's config.json.
nn::NamedTensors merged_weights(const nn::NamedTensors& run_state, const nlohmann::json& config_json);

// `train --init-from RUN`: loads RUN's best (or latest) weights into `model`,
// merged first when RUN trained LoRA adapters, so a new run starts from what
// RUN's model computes. Returns the Hugging Face folder RUN's weights came
// from (its checkpoint's keystone.imported_from or keystone.base_model; ""
// when none), which the new run's checkpoints keep as keystone.base_model
// (PEFT's base_model_name_or_path on `export --to peft`).
std::string load_init_weights(const std::filesystem::path& run_dir, nn::Module& model);

// The checkpoint metadata key that carries that folder from run to run.
inline constexpr const char* kBaseModelKey = "keystone.base_model";

}  // namespace ks::tools
