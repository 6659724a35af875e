// nn/norm.cpp — the norm registry (nn/norm.h).
#include "nn/norm.h"

#include "core/registry.h"

namespace ks::nn {
namespace {
Registry<NormKind>& registry() {
  static Registry<NormKind> r("norm");
  return r;
}
}  // namespace

bool register_norm(const std::string& name, NormKind kind) { return registry().add(name, std::move(kind)); }
const NormKind& norm_kind(const std::string& name) { return registry().at(name); }
std::vector<std::string> norm_kinds() { return registry().names(); }

std::shared_ptr<Norm> make_norm(int64_t dim, const NormConfig& cfg) {
  KS_CHECK(dim > 0, "norm: dim must be positive, got ", dim);
  KS_CHECK(cfg.eps >= 0, "norm: eps must be >= 0, got ", cfg.eps);
  return norm_kind(cfg.type).make(dim, cfg);
}

}  // namespace ks::nn
