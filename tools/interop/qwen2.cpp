// tools/interop/qwen2.cpp — Qwen2ForCausalLM (Qwen2, Qwen2.5): Llama's layers,
// names and mapping (tools/interop/llama.cpp) with biases on the q, k and v
// projections and none on o (Keystone's attention.bias true, out_bias false),
// tied or untied (tie_word_embeddings). use_sliding_window windows the layers
// from max_window_layers on: all of them (0) or none (>= num_hidden_layers)
// is attention.window; a window on some layers only is refused by name.
// Not here: the mapping (llama.cpp).
#include "tools/interop/llama_like.h"

namespace ks::interop {

KS_HF_ARCHITECTURE(llama_like({.name = "Qwen2ForCausalLM",
                               .model_type = "qwen2",
                               .words = "Qwen2",
                               .bias = LlamaVariant::Bias::QkvOnly,
                               .window = LlamaVariant::Window::Qwen2Keys}));

}  // namespace ks::interop
