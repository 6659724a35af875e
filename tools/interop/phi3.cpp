// tools/interop/phi3.cpp — Phi3ForCausalLM (Phi-3 mini and medium): Llama's
// layers and mapping (tools/interop/llama.cpp) with q, k and v in one fused
// self_attn.qkv_proj and gate and up in one mlp.gate_up_proj, cut apart on
// import and joined on export; no biases; sliding_window as Mistral's, or null
// (both are Phi-3). Refused by name: rope_scaling "longrope" (the 128k
// models), a partial_rotary_factor other than 1 (Phi-4-mini).
// Not here: the mapping (llama.cpp).
#include "tools/interop/llama_like.h"

namespace ks::interop {

KS_HF_ARCHITECTURE(llama_like({.name = "Phi3ForCausalLM",
                               .model_type = "phi3",
                               .words = "Phi-3",
                               .bias = LlamaVariant::Bias::None,
                               .window = LlamaVariant::Window::Optional,
                               .fused = true}));

}  // namespace ks::interop
