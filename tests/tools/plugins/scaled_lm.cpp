// tests/tools/plugins/scaled_lm.cpp — a Keystone plugin, built as its own shared
// library (tests/tools/plugins/CMakeLists.txt), that adds the model kind
// "scaled_lm": the decoder LM with its logits multiplied by the kind's own
// option "logit_scale" (typed options deriving from decoder_lm's
// models::DecoderLmOptions, so its key is checked strictly, "did you mean"
// included), trained on language-model windows with decoder_lm's keys and
// checks, which its descriptor and options reuse (models/kind.h).
// The scaling is an op of the plugin's own whose CPU kernel it registers
// (KS_REGISTER_KERNEL into its table "scaled_lm.scale"), so a plugin's kernel
// is recorded under its name too. tests/tools/test_plugins.sh trains it through
// `keystone train --plugin` and reads the run back with eval, generate and
// --resume. Not here: the plugin mechanism (models/plugin.h, core/plugin_loader.h).
#include <any>
#include <cmath>
#include <nlohmann/json.hpp>

#include "autograd/function.h"
#include "models/decoder_lm.h"
#include "models/kind.h"
#include "models/plugin.h"
#include "nn/user_input.h"
#include "ops/cpu/loops.h"

KS_PLUGIN("scaled-lm");

namespace {

using namespace ks;

// out = s · x, x's shape; out contiguous.
using ScaleKernel = void(const Tensor& out, const Tensor& x, double s);
constinit KernelTable<ScaleKernel> scale_kernel("scaled_lm.scale");

template <class T> struct Times {
  T s;
  T operator()(T x) const { return x * s; }
};
void scale_cpu(const Tensor& out, const Tensor& x, double s) {
  dispatch_floating(out.dtype(), "scaled_lm.scale", [&](auto tag) {
    using T = typename decltype(tag)::type;
    cpu::CpuLoops::map<T, T>(Times<T>{T(s)}, out, {x});
  });
}
KS_REGISTER_KERNEL(scale_kernel, CPU, scale_cpu);

// y = s · x, differentiable in x (the gradient is s · the output's).
struct Scale : Function<Scale> {
  static constexpr const char* name = "scaled_lm.scale";
  static Tensor run(const Tensor& x, double s) {
    Tensor out = Tensor::empty(x.sizes(), x.dtype(), x.device());
    if (out.numel() > 0) scale_kernel(x.device(), out, x, s);
    return out;
  }
  static Tensor forward(AutogradContext& ctx, const Tensor& x, double s) {
    ctx.saved_data["s"] = s;
    return run(x, s);
  }
  static std::vector<Tensor> backward(AutogradContext& ctx, const std::vector<Tensor>& grad) {
    return {run(grad[0], std::any_cast<double>(ctx.saved_data.at("s")))};
  }
};

// decoder_lm's own options (tie_embeddings, ...), which the DecoderLM base
// reads typed, plus the plugin's.
struct ScaledOptions : models::DecoderLmOptions {
  double logit_scale = 1.0;

  static ScaledOptions parse(const nlohmann::json& section, const std::string& prefix) {
    ScaledOptions o;
    static_cast<models::DecoderLmOptions&>(o) = models::DecoderLmOptions::parse(section, prefix);
    nn::read_json_key(section, "logit_scale", o.logit_scale, prefix);
    return o;
  }
  static std::vector<KeyDoc> option_keys() {
    std::vector<KeyDoc> keys = models::DecoderLmOptions::option_keys();
    keys.push_back({"logit_scale", "the factor on the logits, > 0"});
    return keys;
  }
  nlohmann::json to_json() const override {
    nlohmann::json j = models::DecoderLmOptions::to_json();
    j["logit_scale"] = logit_scale;
    return j;
  }
  void validate(const models::ModelConfig& cfg, const std::string& prefix) const override {
    models::DecoderLmOptions::validate(cfg, prefix);
    KS_CHECK(logit_scale > 0 && std::isfinite(logit_scale), "config: ", prefix, "logit_scale: must be positive, got ",
             logit_scale);
  }
};

class ScaledLM : public models::DecoderLM {
 public:
  explicit ScaledLM(const models::ModelConfig& cfg) : DecoderLM(cfg) {}
  // decoder_lm's predictions, the logits (N, V) scaled; the loss is their mean cross-entropy.
  models::Predictions predict(const models::Batch& b) override {
    models::Predictions p = DecoderLM::predict(b);
    p.logits = Scale::apply(p.logits, config.options_as<ScaledOptions>().logit_scale);
    return p;
  }
  Tensor loss(const models::Batch& b) override { return Model::loss(b); }
};

std::shared_ptr<models::Model> make_scaled_lm(const models::ModelConfig& cfg) {
  return std::make_shared<ScaledLM>(cfg);
}

models::ModelKind scaled_lm_kind() {
  const models::ModelKind& lm = models::model_kind("decoder_lm");  // its data, keys and checks, reused
  return models::with_model_options<ScaledOptions>(
      {.name = "scaled_lm", .task = lm.task, .keys = lm.keys, .validate = lm.validate, .make = make_scaled_lm});
}

}  // namespace

KS_REGISTER_MODEL(scaled_lm_kind());
