// models/model.cpp — building a model by its kind, and the default training loss.
#include "models/model.h"

#include "ops/compare.h"
#include "ops/loss.h"

namespace ks::models {

Tensor Model::loss(const Batch& batch) {
  const Predictions p = no_targets_ignored(predict(batch));
  return cross_entropy(p.logits, p.targets, {.ignore_index = p.ignore_index});
}

Predictions no_targets_ignored(Predictions p) {
  if (p.ignore_index != kNoTarget && p.targets.defined())
    p.targets = masked_fill(p.targets, eq(p.targets, double(kNoTarget)), double(p.ignore_index));
  return p;
}

std::shared_ptr<Model> build_model(const ModelConfig& cfg) {
  const ModelKind* kind = find_model_kind(cfg.model);
  KS_CHECK(kind, "build_model: no model named '", cfg.model, "' is built into this Keystone");
  return kind->make(cfg);
}

}  // namespace ks::models
