// tests/tools/plugins/clash.cpp — a plugin that registers names Keystone has
// already (the "softmax" family, the "decoder_lm" kind and the CPU kernel of the
// "where" table): loading it must fail naming the plugin and every name, and
// leave the built-in entries in place (tests/tools/test_plugins.sh).
#include "models/model.h"
#include "models/plugin.h"
#include "nn/attention/attention.h"
#include "ops/compare.h"

KS_PLUGIN("clash");

namespace {

struct NoOptions : ks::nn::AttentionOptions {
  static NoOptions parse(const nlohmann::json&, const std::string&) { return {}; }
  static std::vector<ks::KeyDoc> option_keys() { return {}; }
  nlohmann::json to_json() const override { return nlohmann::json::object(); }
  void validate(const ks::nn::AttentionConfig&) const override {}
};

std::shared_ptr<ks::nn::Attention> make_none(const ks::nn::AttentionConfig&) {
  throw ks::Error("the clash plugin's family was built: it must never replace softmax");
}
ks::nn::AttentionCost no_cost(const ks::nn::AttentionConfig&, int64_t, bool) { return {}; }
std::shared_ptr<ks::models::Model> make_no_model(const ks::models::ModelConfig&) {
  throw ks::Error("the clash plugin's model was built: it must never replace decoder_lm");
}

void no_where(const ks::Tensor&, const ks::Tensor&, const ks::Tensor&, const ks::Tensor&) {
  throw ks::Error("the clash plugin's kernel ran: it must never replace where's CPU kernel");
}

}  // namespace

KS_REGISTER_ATTENTION("softmax", NoOptions, make_none, no_cost);
KS_REGISTER_MODEL({.name = "decoder_lm", .task = "language_model", .make = make_no_model});
KS_REGISTER_KERNEL(ks::where_kernel, CPU, no_where);
