// tools/interop/llama_like.h — the Llama-shaped Hugging Face architectures as
// one descriptor with a few switches: LlamaForCausalLM (tools/interop/llama.cpp)
// and the families that differ from it by a key, a bias or a fused tensor,
// each registered from its own file with its variant
// (tools/interop/mistral.cpp: a sliding window; tools/interop/qwen2.cpp: q/k/v
// biases; tools/interop/phi3.cpp: fused q/k/v and gate/up projections, a
// window or none). The shared mapping, the tensor names and the checks live in
// llama.cpp.
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
  // Phi-3: none, and no key for them.
  enum class Bias { AttentionBiasKey, QkvOnly, None } bias = Bias::AttentionBiasKey;
  // How config.json gives a sliding window: none (Llama), sliding_window
  // (Mistral: null or a width), use_sliding_window + sliding_window +
  // max_window_layers (Qwen2: the layers from max_window_layers on; all or
  // none of them is what Keystone's one window per model expresses);
  // Optional: sliding_window as Mistral's, but a model without one is this
  // architecture too (Phi-3).
  enum class Window { None, SlidingWindow, Qwen2Keys, Optional } window = Window::None;
  // Phi-3's fused projections: self_attn.qkv_proj (q's h·p rows, then k's and
  // v's g·p each) and mlp.gate_up_proj (gate's f rows, then up's).
  bool fused = false;
};

// The descriptor of `v` (register it with KS_HF_ARCHITECTURE in the variant's file).
HfArchitecture llama_like(const LlamaVariant& v);

}  // namespace ks::interop
