// nn/norm.h — the normalisation layers of the Transformer blocks as
// descriptors: a Norm module interface and a registry of norm kinds by name
// (model.norm), each kind in its own file registering itself
// (KS_REGISTER_NORM): "layernorm" (nn/norm_layer.*), "rmsnorm" (nn/norm_rms.*).
// Layers and models ask make_norm for "the configured norm" and name none.
//
// Shapes: a norm normalises the last dim: (..., dim) -> (..., dim).
// Not here: the fused ops (ops/layer_norm.h, ops/rms_norm.h), the config keys
// (models/config.cpp: model.norm, model.norm_eps, model.bias).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/dispatch.h"  // KS_CONCAT
#include "nn/module.h"

namespace ks::nn {

// What a norm is built from; the same for every kind.
struct NormConfig {
  std::string type = "layernorm";  // a registered kind
  double eps = 1e-5;               // added to the variance / mean square
  bool bias = true;                // a learned shift beside the gain (false: gain only)
};

// A normalisation layer over the last dim; parameters "weight" (the gain,
// ones) and, with a shift, "bias" (zeros).
class Norm : public Module {
 public:
  using Module::Module;
  virtual Tensor forward(const Tensor& x) const = 0;  // (..., dim) -> (..., dim)
};

struct NormKind {
  std::string doc;  // one line, for the config key's meaning
  std::shared_ptr<Norm> (*make)(int64_t dim, const NormConfig& cfg);
  int64_t (*params)(int64_t dim, bool bias);  // its parameter count, for the models' cost reports
};

bool register_norm(const std::string& name, NormKind kind);
// The kind named `name`; else throws "unknown norm 'x' (expected layernorm or rmsnorm)".
const NormKind& norm_kind(const std::string& name);
std::vector<std::string> norm_kinds();  // sorted
// A norm of width `dim` of cfg.type.
std::shared_ptr<Norm> make_norm(int64_t dim, const NormConfig& cfg);

}  // namespace ks::nn

#define KS_REGISTER_NORM(name, ...) \
  static const bool KS_CONCAT(ks_norm_registered_, __LINE__) = ::ks::nn::register_norm(name, __VA_ARGS__)
