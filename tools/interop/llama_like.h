// tools/interop/llama_like.h — the Llama-shaped Hugging Face architectures as
// one descriptor with a few switches: LlamaForCausalLM (tools/interop/llama.cpp)
// and the families that differ from it by a key or a bias, each registered
// from its own file with its variant (tools/interop/mistral.cpp: a sliding
// window; tools/interop/qwen2.cpp: q/k/v biases). The shared mapping, the
// tensor names and the checks live in llama.cpp.
// Not here: GPT-2 (tools/interop/gpt2.cpp), the command (import_export.cpp).
#pragma once

#include <string>

#include "tools/interop/hf_architecture.h"

namespace ks::interop {

struct LlamaVariant {
  std::string name;        // "LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM"
  std::string model_type;  // "llama", "mistral", "qwen2"
  std::string words;       // how errors name it: "Llama", "Mistral", "Qwen2"
  // Which biases the attention projections have: Llama's attention_bias key
  // (q, k, v and o together, or none); Qwen2's fixed q/k/v ones (o none).
  enum class Bias { AttentionBiasKey, QkvOnly } bias = Bias::AttentionBiasKey;
  // How config.json gives a sliding window: none (Llama), sliding_window
  // (Mistral: null or a width), use_sliding_window + sliding_window +
  // max_window_layers (Qwen2: the layers from max_window_layers on; all or
  // none of them is what Keystone's one window per model expresses).
  enum class Window { None, SlidingWindow, Qwen2Keys } window = Window::None;
};

// The descriptor of `v` (register it with KS_HF_ARCHITECTURE in the variant's file).
HfArchitecture llama_like(const LlamaVariant& v);

}  // namespace ks::interop
