// tools/interop/mistral.cpp — MistralForCausalLM: Llama's layers, names and
// mapping (tools/interop/llama.cpp) with a sliding window. config.json's
// sliding_window (Mistral 7B v0.1: 4096) becomes attention.window: the query
// at position i sees the keys at i − window + 1 .. i only, in the fused
// kernels and through the KV cache (ops/attention.h); null is no window.
// Export writes this architecture for a Llama-shaped model with a window; one
// without (Mistral v0.2 on) exports as LlamaForCausalLM, the same tensors.
// Not here: the mapping (llama.cpp), the window's kernels (ops/cpu/attention.cpp).
#include "tools/interop/llama_like.h"

namespace ks::interop {

KS_HF_ARCHITECTURE(llama_like({.name = "MistralForCausalLM",
                               .model_type = "mistral",
                               .words = "Mistral",
                               .window = LlamaVariant::Window::SlidingWindow}));

}  // namespace ks::interop
