// nn/checkpoint.cpp — model + optimizer state in one safetensors file.
#include "nn/checkpoint.h"


namespace ks::nn {
namespace {
const std::string kOptimizerPrefix = "optimizer/";
}

void save_checkpoint(const std::string& path, const Module& model, const Optimizer* optimizer,
                     const Metadata& metadata) {
  save_checkpoint(path, model, optimizer ? optimizer->state_dict() : NamedTensors{}, metadata);
}

void save_checkpoint(const std::string& path, const Module& model, const NamedTensors& optimizer_state,
                     const Metadata& metadata) {
  NamedTensors all = model.state_dict();
  for (auto& [key, t] : optimizer_state) all.emplace_back(kOptimizerPrefix + key, t);
  save_safetensors(path, all, metadata);
}

NamedTensors checkpoint_optimizer_state(const SafetensorsContent& content) {
  NamedTensors out;
  for (auto& [name, t] : content.tensors)
    if (name.rfind(kOptimizerPrefix, 0) == 0) out.emplace_back(name.substr(kOptimizerPrefix.size()), t);
  return out;
}

Metadata load_checkpoint(const std::string& path, Module& model, Optimizer* optimizer, bool strict) {
  return load_checkpoint(load_safetensors(path), path, model, optimizer, strict);
}

Metadata load_checkpoint(const SafetensorsContent& content, const std::string& path, Module& model,
                         Optimizer* optimizer, bool strict) {
  NamedTensors model_state, optim_state;
  for (auto& [name, t] : content.tensors) {
    if (name.rfind(kOptimizerPrefix, 0) == 0) optim_state.emplace_back(name.substr(kOptimizerPrefix.size()), t);
    else model_state.emplace_back(name, t);
  }
  try {
    model.load_state_dict(model_state, strict);
    if (optimizer) {
      KS_CHECK(!optim_state.empty(), "the file holds no optimizer state");
      optimizer->load_state_dict(optim_state);
    }
  } catch (const Error& e) {
    throw Error(str("checkpoint ", path, ": ", e.what()));
  }
  return content.metadata;
}

}  // namespace ks::nn
