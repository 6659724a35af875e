// nn/feed_forward.cpp — the feed-forward and activation registries.
#include "nn/feed_forward.h"

#include <cmath>

#include "core/factory.h"
#include "core/registry.h"
#include "nn/init.h"
#include "ops/elementwise.h"
#include "ops/unary.h"
#include "ops/view.h"

namespace ks::nn {

namespace {
Registry<ActivationKind>& activations() {
  static Registry<ActivationKind> r("activation");
  return r;
}
}  // namespace

bool register_activation(const std::string& name, ActivationKind kind, int order) {
  KS_CHECK(kind.apply, "register_activation: activation '", name, "' needs a function");
  return activations().add(name, kind, order);
}

std::vector<std::string> activation_names() { return activations().names(); }

Activation parse_activation(const std::string& name) {
  KS_CHECK(activations().contains(name), "unknown activation '", name, "' (expected ",
           listed(activation_names(), " or "), ")");
  return name;
}

Tensor activate(const Activation& a, const Tensor& x) {
  const ActivationKind* kind = activations().find(a);
  KS_CHECK(kind, "unknown activation '", a, "' (expected ", listed(activation_names(), " or "), ")");
  return kind->apply(x);
}

namespace {
Registry<FeedForwardKind>& registry() {
  static Registry<FeedForwardKind> r("feed-forward");
  return r;
}
}  // namespace

bool register_feed_forward(const std::string& name, FeedForwardKind kind) {
  return registry().add(name, std::move(kind));
}
const FeedForwardKind& feed_forward_kind(const std::string& name) { return registry().at(name); }
std::vector<std::string> feed_forward_kinds() { return registry().names(); }

std::shared_ptr<FeedForward> make_feed_forward(const std::string& name, const FeedForwardConfig& cfg) {
  KS_CHECK(cfg.d_model > 0 && cfg.d_ff > 0, "feed-forward '", name, "': sizes must be positive, got d_model ",
           cfg.d_model, ", d_ff ", cfg.d_ff);
  return feed_forward_kind(name).make(cfg);
}

}  // namespace ks::nn
