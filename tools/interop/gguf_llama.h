// tools/interop/gguf_llama.h — a Keystone decoder_lm as a GGUF file of
// llama.cpp's "llama" or "qwen2" architecture, and back: what `keystone export
// --to gguf` and `keystone import --from gguf` (tools/interop/import_export.cpp)
// call. The model goes through the LlamaForCausalLM descriptor
// (tools/interop/llama.cpp), or where that cannot express it (biases on q, k
// and v) the Qwen2ForCausalLM one (tools/interop/qwen2.cpp), so GGUF can
// express exactly the runs those config.json files can, less a sliding
// window (llama.cpp's llama and qwen2 attend to every position); this file
// adds GGUF's names, keys (under the architecture's name: "llama.block_count",
// "qwen2.block_count"), types and llama.cpp's rope layout:
//
//   HF (LlamaForCausalLM)                       GGUF (llama)
//   model.embed_tokens.weight (V, d)            token_embd.weight      dims [d, V]
//   model.layers.i.input_layernorm.weight       blk.i.attn_norm.weight (F32 always)
//   model.layers.i.self_attn.q_proj.weight      blk.i.attn_q.weight    rows permuted (below)
//   model.layers.i.self_attn.k_proj.weight      blk.i.attn_k.weight    rows permuted (below)
//   model.layers.i.self_attn.{v,o}_proj.weight  blk.i.attn_v.weight, blk.i.attn_output.weight
//   model.layers.i.post_attention_layernorm     blk.i.ffn_norm.weight  (F32 always)
//   model.layers.i.mlp.{gate,up,down}_proj      blk.i.ffn_{gate,up,down}.weight
//   model.norm.weight                           output_norm.weight     (F32 always)
//   lm_head.weight (untied)                     output.weight          (tied: absent)
//   (qwen2) model.layers.i.self_attn.{q,k,v}_proj.bias  blk.i.attn_{q,k,v}.bias (F32 always)
//
// Rope: llama.cpp's llama rotates GGML's "normal" way, pairing dimensions
// (2j, 2j+1) of a head; HF and Keystone pair j with j + p/2. So q_proj's and
// k_proj's rows are permuted per head as convert_hf_to_gguf.py's
// LlamaModel.permute does: GGUF row 2j + s of a head is HF row s·p/2 + j
// (s in {0, 1}, j < p/2), with q over its h heads and k over its g kv heads.
// Import undoes it. llama.cpp's qwen2 rotates HF's way (NEOX): no permutation.
//
// Tokenizer: a byte-level hf_bpe (GPT-2's regex; Llama-3's Split with
// ignore_merges; Qwen2's without) becomes tokenizer.ggml.model "gpt2" with pre
// "gpt-2", "llama-bpe" or "qwen2", tokens (vocabulary texts, GPT-2's byte
// characters), token_type, merges, eos (and bos = eos, as the HF export;
// add_bos_token false); a SentencePiece-style one becomes tokenizer.ggml.model
// "llama" with scores (tools/interop/gguf_sentencepiece.h says when the two
// agree, and refuses where they would not).
// Refused, saying why: Keystone's own tokenizers (byte, char, word, bpe),
// which no llama.cpp tokenizer reproduces id for id. Import rebuilds the
// tokenizer.json of either kind.
// Not here: the container (nn/gguf.h), the commands (tools/interop/import_export.cpp).
#pragma once

#include <memory>
#include <string>

#include "datasets/tokenizer.h"
#include "models/config.h"
#include "nn/gguf.h"
#include "nn/module.h"

namespace ks::interop {

// "f32", "f16", "bf16", "q8_0" -> the type of the 2-D weights.
nn::GgmlType gguf_weight_type(const std::string& word);

// The run's model and tokenizer as GGUF bytes. `notes` collects what the
// command should tell (a Q8_0 tensor stored F16 because its rows do not split
// into 32-value blocks); `architecture` gets the one written ("llama",
// "qwen2"). Errors say why the run cannot be written.
std::string gguf_from_run(const models::ModelConfig& cfg, const nn::NamedTensors& state,
                          const data::Tokenizer* tokenizer, nn::GgmlType type, const std::string& name,
                          std::string& notes, std::string& architecture);

struct GgufRun {
  models::ModelConfig model;
  nn::NamedTensors weights;                    // by Keystone state-dict name, float32
  std::unique_ptr<data::Tokenizer> tokenizer;  // an hf_bpe
  std::string types;                           // the file's tensor types, e.g. "F32 x5, Q8_0 x14"
  std::string architecture;                    // general.architecture: "llama" or "qwen2"
  std::string hf_architecture;                 // the descriptor it went through: "LlamaForCausalLM", ...
};
// The model, weights and tokenizer of a llama or qwen2 GGUF file. Errors name
// the key or the GGUF tensor.
GgufRun gguf_to_run(const nn::GgufFile& f);

}  // namespace ks::interop
