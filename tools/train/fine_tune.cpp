// tools/train/fine_tune.cpp — train.freeze and train.lora applied to a run's model.
#include "tools/train/fine_tune.h"

#include <cstdio>

#include "nn/checkpoint.h"
#include "nn/lora.h"
#include "nn/safetensors.h"
#include "tools/train/run_dir.h"

namespace ks::tools {

namespace fs = std::filesystem;

std::string apply_fine_tuning(nn::Module& model, const TrainOptions& train) {
  if (!train.lora && train.freeze.empty()) return "";
  size_t adapted = 0;
  if (train.lora) adapted = nn::apply_lora(model, *train.lora).size();
  nn::freeze_parameters(model, train.freeze);
  const int64_t total = model.num_parameters(), trainable = nn::trainable_parameters(model);
  KS_CHECK(trainable > 0, "train.freeze", train.lora ? " with train.lora" : "", " leaves no parameter to train (",
           total, " frozen)");
  char share[32];
  std::snprintf(share, sizeof share, "%.3g%%", 100.0 * double(trainable) / double(total));
  return str(train.lora ? str("LoRA rank ", train.lora->rank, " alpha ", train.lora->alpha, " on ", adapted,
                              " Linear modules; ")
                        : std::string(),
             trainable, " of ", total, " parameters trainable (", share, ")");
}

nn::NamedTensors merged_weights(const nn::NamedTensors& run_state, const nlohmann::json& config_json) {
  nlohmann::json c = config_json;
  const TrainConfig config = parse_train_config(c);
  if (!config.train.lora) return run_state;
  return nn::merge_lora(run_state, config.train.lora->scale());
}

std::string load_init_weights(const fs::path& run_dir, nn::Module& model) {
  RunPaths from{run_dir};
  const fs::path weights = fs::exists(from.best()) ? from.best() : from.latest();
  KS_CHECK(fs::exists(weights), "--init-from: run folder ", from.dir.string(), " has no checkpoint");
  // Widened to float32 as read: the model trains float32 weights, and an imported run may store
  // bf16 or fp16 ones (import --dtype).
  nn::SafetensorsContent content = nn::load_safetensors(weights.string(), {}, kFloat32);
  std::string base;
  for (const char* key : {"keystone.imported_from", kBaseModelKey})
    if (auto it = content.metadata.find(key); it != content.metadata.end()) base = it->second;
  nn::NamedTensors state;
  for (auto& [name, t] : content.tensors)
    if (name.rfind(nn::kOptimizerPrefix, 0) != 0 && name.rfind(nn::kEmaPrefix, 0) != 0) state.emplace_back(name, t);
  if (nn::lora_paths(state).empty()) {
    nn::load_checkpoint(content, weights.string(), model);  // the common case, with its checks and messages
    return base;
  }
  nlohmann::json config_json = read_json_file(from.config().string());
  upgrade_stored_config(config_json);
  try {
    model.load_state_dict(merged_weights(state, config_json));
  } catch (const Error& e) {
    throw Error(str("--init-from ", weights.string(), " (its LoRA adapters merged): ", e.what()));
  }
  return base;
}

}  // namespace ks::tools
