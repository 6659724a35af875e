// nn/lora.h — parameter-efficient fine-tuning: freezing parameters by name
// and LoRA adapters on Linear layers (Hu et al. 2021, "LoRA: Low-Rank
// Adaptation of Large Language Models"), as Hugging Face's PEFT builds them.
//
//   y = x Wᵀ + b + (alpha / r) · dropout(x) Aᵀ Bᵀ      x (..., in), A (r, in), B (out, r)
//
// A starts kaiming-uniform (a = √5, PyTorch's Linear default, PEFT's lora_A
// init) and B at zero, so an adapted model computes exactly what its base
// does until the first step. The adapter lives in nn::Linear itself
// (nn/layers.h: Linear::lora, children lora_A and lora_B), so state-dict
// names are `<module path>.lora_A.weight` / `.lora_B.weight`, PEFT's names
// without its adapter name.
//
// Patterns (train.freeze, train.lora.targets, train.lora.train_also) are
// globs over dotted names: `*` any run of characters (dots too), `?` one
// character. A pattern matches a name when it matches the whole name or a
// dotted suffix of it (PEFT's target_modules rule), so "q" matches every
// module path ending in ".q" and "layers.0.*" everything under layers.0.
// A pattern that matches nothing is an error naming it: a typo never leaves
// a model silently fully trainable.
// Not here: the config keys (tools/train/run_config.cpp), PEFT's file layout
// (tools/interop/peft.cpp), the optimizer (which simply holds no state for a
// parameter that needs no gradient: nn/optim.h decay_groups).
#pragma once

#include <string>
#include <vector>

#include "nn/module.h"

namespace ks::nn {

struct LoraOptions {
  int64_t rank = 8;      // r
  double alpha = 16;     // the update is scaled by alpha / r
  double dropout = 0.0;  // on the adapter's input only
  // Linear modules to adapt, by module path. The default: every attention
  // projection of every family (softmax, fixed head size, MGK, linear): the
  // encoder's `layers.i.attn.{q,k,v,o}`, the decoder's `self_attn` and `cross_attn`.
  std::vector<std::string> targets = {"*attn.q", "*attn.k", "*attn.v", "*attn.o"};
  // Parameters left trainable beside the adapters (PEFT's modules_to_save),
  // by parameter name, e.g. "head.weight"; every other base parameter is frozen.
  std::vector<std::string> train_also;
  double scale() const { return alpha / double(rank); }
};

// Does `pattern` match `name` whole or one of its dotted suffixes (above)?
bool name_matches(const std::string& pattern, const std::string& name);

// Marks every parameter whose dotted name matches one of `patterns` as
// needing no gradient. Returns the names frozen; a pattern matching no
// parameter is an error naming it and a few of the model's names.
std::vector<std::string> freeze_parameters(Module& model, const std::vector<std::string>& patterns);

// Adds an adapter to every Linear whose module path matches a target, then
// freezes every parameter but the adapters' and those train_also names.
// Returns the adapted module paths. Errors: a target matching no Linear (or
// matching a module that is not a Linear, naming its type), a train_also
// pattern matching no parameter, a rank below 1.
std::vector<std::string> apply_lora(Module& model, const LoraOptions& options);

// The module paths of the adapters in a state dict (keys "<path>.lora_A.weight").
std::vector<std::string> lora_paths(const NamedTensors& state);

// The state dict with every adapter merged into its base, W ← W + scale · B A
// (in float64, rounded once to W's dtype), and the lora_A/lora_B entries
// removed: what a plain (unadapted) model of the same config loads.
NamedTensors merge_lora(const NamedTensors& state, double scale);

// Parameters that need a gradient, and their element count.
int64_t trainable_parameters(const Module& model);

}  // namespace ks::nn
