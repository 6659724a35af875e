// tools/interop/peft.h — a LoRA run's adapters in Hugging Face PEFT's layout,
// what `keystone export --to peft RUN --out DIR` writes and
// `PeftModel.from_pretrained(base, DIR)` reads:
//
//   adapter_config.json        {"peft_type": "LORA", "r", "lora_alpha", "lora_dropout",
//                               "target_modules" (HF module names), "fan_in_fan_out" (GPT-2's
//                               Conv1D), "bias": "none", "task_type": "CAUSAL_LM",
//                               "base_model_name_or_path", ...}
//   adapter_model.safetensors  base_model.model.<HF module path>.lora_A.weight (r, in)
//                              base_model.model.<HF module path>.lora_B.weight (out, r)
//
// (PEFT's save_pretrained drops the adapter name, "default", from the keys.)
// The HF module paths come from the architecture's descriptor
// (HfArchitecture::export_lora), which also fuses: GPT-2's q, k and v
// adapters become one c_attn adapter of rank 3r, whose rank and alpha go in
// rank_pattern and alpha_pattern. Not here: the merged model (`export --to
// hf` merges a LoRA run's adapters into the weights it writes).
#pragma once

#include <string>

#include "nn/lora.h"
#include "tools/interop/hf_architecture.h"

namespace ks::interop {

struct PeftAdapter {
  json config;               // adapter_config.json
  nn::NamedTensors tensors;  // adapter_model.safetensors
};

// `state`: the run's state dict (adapters included); `base`: the HF model the
// adapter goes on (adapter_config.json's base_model_name_or_path; "" writes null).
// Errors: a run without adapters, train.lora.train_also set (PEFT's
// modules_to_save is not written), an adapter the architecture has no module for.
PeftAdapter peft_adapter(const nn::NamedTensors& state, const models::ModelConfig& m, const nn::LoraOptions& lora,
                         const HfArchitecture& a, const std::string& base);

}  // namespace ks::interop
