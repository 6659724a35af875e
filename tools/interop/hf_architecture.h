// tools/interop/hf_architecture.h — what `keystone import --from hf` and
// `keystone export --to hf` need to know about one Hugging Face architecture,
// as a descriptor in its own file (tools/interop/gpt2.cpp: GPT2LMHeadModel,
// tools/interop/llama.cpp: LlamaForCausalLM), registered by name; the commands
// (tools/interop/import_export.cpp) name none.
//
// A descriptor maps config.json to a Keystone model section and back, and
// the HF tensor names, layouts (GPT-2's Conv1D keeps weights as (in, out),
// fused qkv) to the model's state dict and back. Its checks word every
// error with the tensor or config key it is about.
// Not here: reading the folder's safetensors (nn/safetensors_folder.h), the
// tokenizer (datasets/hf_bpe.h).
#pragma once

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "models/config.h"
#include "nn/module.h"

namespace ks::interop {

using json = nlohmann::json;

// "an array", "a string", "a number", "true or false", "null", "an object":
// what a JSON value is, for "expected a JSON object, got an array".
std::string json_kind(const json& j);

// A folder's config.json with typed reads whose errors name the file and key.
class HfConfig {
 public:
  // `j` must be a JSON object ("<where>: expected a JSON object, got an array").
  HfConfig(json j, std::string where);
  bool has(const std::string& key) const { return j_.contains(key) && !j_.at(key).is_null(); }
  int64_t integer(const std::string& key) const;                        // required, > 0
  int64_t integer_or(const std::string& key, int64_t fallback) const;   // absent or null: fallback
  int64_t positive_or(const std::string& key, int64_t fallback) const;  // a size: absent or null: fallback, else > 0
  double number_or(const std::string& key, double fallback) const;
  double probability_or(const std::string& key, double fallback) const;  // a dropout: in [0, 1)
  bool boolean_or(const std::string& key, bool fallback) const;
  std::string string_or(const std::string& key, const std::string& fallback) const;
  [[noreturn]] void fail(const std::string& key, const std::string& problem) const;
  const json& raw() const { return j_; }

 private:
  json j_;
  std::string where_;
};

// The folder's tensors by name (float32); each is taken once, with its shape
// checked against what the config implies.
class HfTensors {
 public:
  HfTensors(const nn::NamedTensors& tensors, std::string where);
  bool has(const std::string& name) const { return by_name_.count(name) > 0; }
  // The tensor, which must exist and have `shape`; `why` names the config keys
  // that fix the shape ("n_embd 64"), for the error when it differs.
  Tensor take(const std::string& name, const Shape& shape, const std::string& why);
  void ignore(const std::string& name) { taken_[name] = true; }  // a known buffer the model rebuilds
  // Throws naming the first tensor nothing took (not part of `architecture`).
  void check_all_taken(const std::string& architecture) const;

 private:
  std::map<std::string, Tensor> by_name_;
  std::map<std::string, bool> taken_;
  std::string where_;
};

// One LoRA adapter of an exported model, under Hugging Face's module path
// (PEFT's layout: tools/interop/peft.cpp). A and B are in the Linear sense,
// A (r, in), B (out, r), whatever the module (PEFT keeps a Conv1D's adapter
// so too and transposes the product: fan_in_fan_out).
struct HfLora {
  std::string module;  // e.g. "model.layers.0.self_attn.q_proj", "transformer.h.0.attn.c_attn"
  Tensor A, B;
  int64_t rank = 0;  // A's rows: the run's r, or a sum of them where projections are fused
  double alpha = 0;  // keeps alpha / rank the run's scale
};
// The run's adapters by Keystone module path ("layers.0.self_attn.q"): {A, B}.
using LoraAdapters = std::map<std::string, std::pair<Tensor, Tensor>>;

struct HfArchitecture {
  std::string name;        // config.json "architectures"[0], e.g. "GPT2LMHeadModel"
  std::string model_type;  // config.json "model_type" on export, e.g. "gpt2"
  // config.json -> the model section (a decoder_lm); errors name the key.
  std::function<models::ModelConfig(const HfConfig&)> model_config;
  // The HF tensors -> the model's parameters by state-dict name.
  std::function<nn::NamedTensors(HfTensors&, const HfConfig&, const models::ModelConfig&)> import_tensors;
  // Why this architecture cannot express the model ("" when it can): the
  // blocks and options it has no place for, each named by its config key.
  std::function<std::string(const models::ModelConfig&)> cannot_export;
  // The model section -> config.json (without the token ids, which the command adds).
  std::function<json(const models::ModelConfig&)> hf_config;
  // The model's state dict -> the HF tensors, in the file's order.
  std::function<nn::NamedTensors(const nn::NamedTensors& state, const models::ModelConfig&)> export_tensors;
  // The run's LoRA adapters -> HF modules (rank r, scale alpha/r as given);
  // an adapter with no HF module of its own is an error naming it and why.
  // Null: this architecture exports no adapters (merged export only).
  std::function<std::vector<HfLora>(const LoraAdapters&, const models::ModelConfig&, int64_t r, double alpha)>
      export_lora;
  // PEFT's fan_in_fan_out: the architecture's projections are Conv1D, weight (in, out) (GPT-2).
  bool fan_in_fan_out = false;
};

// Registers at static initialisation (a descriptor file's KS_HF_ARCHITECTURE).
bool register_hf_architecture(HfArchitecture a);
// By config.json's architecture name; unknown: an error listing the known ones.
const HfArchitecture& hf_architecture(const std::string& name, const std::string& where);
// The architectures in name order (export tries each).
std::vector<const HfArchitecture*> hf_architectures();

// The model's state dict by name, for an export.
class ModelState {
 public:
  explicit ModelState(const nn::NamedTensors& state) : by_name_(state.begin(), state.end()) {}
  // The tensor, contiguous; a model without it is an error naming it.
  Tensor at(const std::string& name) const;

 private:
  std::map<std::string, Tensor> by_name_;
};

// A decoder LM tied the Keystone way (tie_embeddings with tied_lookup_scaled
// or tied_lookup_reversed) made the untied model that computes the same
// logits, a form Hugging Face loads (tie_word_embeddings false): its head
// holds the table E, its embedding the lookups the tied model makes of E
// (features reversed, times √d). Exact: a permutation, and the very float32
// product the tied forward computes. `state`, when given, is rewritten to
// match (tok.weight, head.weight). Any other model is left as it is: false.
bool untie_keystone_lookups(models::ModelConfig& m, nn::NamedTensors* state);

// The reasons every descriptor here gives for a model that is not a pre-norm
// decoder_lm with softmax attention (the "softmax" or "fixed" family: an
// explicit head size; no ALiBi) and a head that is its own or
// tied with unscaled, unreversed lookups, each naming its key;
// `architecture` words them ("GPT-2").
std::vector<std::string> causal_lm_mismatches(const models::ModelConfig& m, const std::string& architecture);
// "a; b": a descriptor's reasons joined for cannot_export ("" for none).
std::string joined(const std::vector<std::string>& reasons);

// config.json's tie_word_embeddings (absent: `tied_default`, the
// architecture's) as m's head: tied, the lookups used as they are
// (tied_lookup_scaled and tied_lookup_reversed false), or a head of its own.
void set_head(models::ModelConfig& m, const HfConfig& c, bool tied_default);
// The head's weight: none for a tied model (an lm_head.weight the file holds
// anyway must equal `table`, the embedding); else lm_head.weight (V, d) as
// head.weight, its absence an error naming it. `why` names the keys that fix
// its shape.
void import_head(nn::NamedTensors& out, HfTensors& t, const models::ModelConfig& m, const Tensor& table,
                 const std::string& why);
// lm_head.weight for a model with a head of its own; none for a tied one
// (the command then writes tie_word_embeddings true).
void export_head(nn::NamedTensors& out, const ModelState& s, const models::ModelConfig& m);

// Each adapter under `hf_module(path)` as it is; a path it maps to "" is an
// error naming the path (`architecture` words it).
std::vector<HfLora> one_to_one_lora(const LoraAdapters& adapters, int64_t r, double alpha,
                                    const std::function<std::string(const std::string&)>& hf_module,
                                    const std::string& architecture);

// A raw (out, in) weight from a Conv1D (in, out) one and back: a contiguous transpose.
Tensor transposed(const Tensor& t);
// Rows [start, start + length) of dim `dim`, contiguous.
Tensor slice(const Tensor& t, int64_t dim, int64_t start, int64_t length);

}  // namespace ks::interop

#define KS_HF_CONCAT_(a, b) a##b
#define KS_HF_CONCAT(a, b) KS_HF_CONCAT_(a, b)
// In a descriptor's .cpp: KS_HF_ARCHITECTURE(make_descriptor());
#define KS_HF_ARCHITECTURE(...) \
  static const bool KS_HF_CONCAT(ks_hf_registered_, __LINE__) = ::ks::interop::register_hf_architecture(__VA_ARGS__)
