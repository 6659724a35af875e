// tools/interop/peft.cpp — LoRA adapters as PEFT saves them (tools/interop/peft.h).
#include "tools/interop/peft.h"

#include <algorithm>
#include <set>

#include "core/copy.h"
#include "core/error.h"

namespace ks::interop {

namespace {

// "transformer.h.3.attn.c_attn" -> "attn.c_attn": the path under its layer (after the first
// numeric component); a path with none (lm_head) is its own.
std::string under_layer(const std::string& module) {
  size_t start = 0;
  while (start < module.size()) {
    const size_t dot = module.find('.', start);
    const std::string part = module.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!part.empty() && std::all_of(part.begin(), part.end(), ::isdigit))
      return dot == std::string::npos ? module : module.substr(dot + 1);
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return module;
}

// PEFT's lora_alpha is an int in its config class: a whole alpha is written as one.
json number(double v) { return v == double(int64_t(v)) ? json(int64_t(v)) : json(v); }

}  // namespace

PeftAdapter peft_adapter(const nn::NamedTensors& state, const models::ModelConfig& m, const nn::LoraOptions& lora,
                         const HfArchitecture& a, const std::string& base) {
  KS_CHECK(a.export_lora != nullptr, "peft export: ", a.name,
           " has no LoRA mapping here; export the merged model with "
           "--to hf instead");
  KS_CHECK(lora.train_also.empty(), "peft export: the run trains train.lora.train_also (", lora.train_also.front(),
           ") beside its adapters, which PEFT keeps as modules_to_save; that is not written here. Export the "
           "merged model with --to hf instead");
  LoraAdapters adapters;
  std::map<std::string, Tensor> by_name(state.begin(), state.end());
  for (const std::string& path : nn::lora_paths(state))
    adapters[path] = {by_name.at(path + ".lora_A.weight"), by_name.at(path + ".lora_B.weight")};
  KS_CHECK(!adapters.empty(), "peft export: the run has no LoRA adapters (train.lora)");
  std::vector<HfLora> mapped = a.export_lora(adapters, m, lora.rank, lora.alpha);

  // target_modules: each module's path under its layer ("attn.c_attn", "self_attn.q_proj") when
  // every layer has it (PEFT matches a name by suffix), else the full paths, so that PEFT adds
  // adapters exactly where the run had them.
  std::map<std::string, std::set<std::string>> by_kind;  // "attn.c_attn" -> full paths
  for (const HfLora& l : mapped) by_kind[under_layer(l.module)].insert(l.module);
  std::set<std::string> targets;
  for (const auto& [kind, paths] : by_kind) {
    const bool per_layer = kind != *paths.begin();
    if (!per_layer || int64_t(paths.size()) == m.layers)
      targets.insert(kind);
    else
      targets.insert(paths.begin(), paths.end());
  }
  // A fused module of another rank (GPT-2's c_attn, n·r) goes in rank_pattern and alpha_pattern,
  // by the same name; every module of that name must have the same rank.
  json rank_pattern = json::object(), alpha_pattern = json::object();
  std::map<std::string, int64_t> rank_of;
  for (const HfLora& l : mapped) {
    const std::string kind = targets.count(l.module) ? l.module : under_layer(l.module);
    auto [it, fresh] = rank_of.emplace(kind, l.rank);
    KS_CHECK(it->second == l.rank, "peft export: ", kind, " adapters of ranks ", it->second, " and ", l.rank,
             " (GPT-2's c_attn fuses q, k and v: adapt all three, or the same ones, in every layer)");
    if (l.rank != lora.rank) {
      rank_pattern[kind] = l.rank;
      alpha_pattern[kind] = number(l.alpha);
    }
  }
  PeftAdapter out;
  for (const HfLora& l : mapped) {
    out.tensors.emplace_back("base_model.model." + l.module + ".lora_A.weight",
                             contiguous_raw(to_raw(l.A, Device::cpu(), DType::Float32)));
    out.tensors.emplace_back("base_model.model." + l.module + ".lora_B.weight",
                             contiguous_raw(to_raw(l.B, Device::cpu(), DType::Float32)));
  }
  out.config = {{"peft_type", "LORA"},
                {"task_type", "CAUSAL_LM"},
                {"base_model_name_or_path", base.empty() ? json(nullptr) : json(base)},
                {"r", lora.rank},
                {"lora_alpha", number(lora.alpha)},
                {"lora_dropout", lora.dropout},
                {"target_modules", std::vector<std::string>(targets.begin(), targets.end())},
                {"fan_in_fan_out", a.fan_in_fan_out},
                {"bias", "none"},
                {"modules_to_save", nullptr},
                {"init_lora_weights", true},
                {"layers_to_transform", nullptr},
                {"layers_pattern", nullptr},
                {"rank_pattern", rank_pattern},
                {"alpha_pattern", alpha_pattern},
                {"use_rslora", false},
                {"use_dora", false},
                {"inference_mode", true},
                {"revision", nullptr}};
  return out;
}

}  // namespace ks::interop
