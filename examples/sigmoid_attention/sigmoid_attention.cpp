// examples/sigmoid_attention/sigmoid_attention.cpp — a Keystone plugin
// (libsigmoid_attention.so) adding the attention family "sigmoid": sigmoid
// attention (Ramapuram et al., 2024, "Theory, Analysis, and Best Practices
// for Sigmoid Self-Attention"). Per head, with S keys,
//
//   weights = sigmoid(Q Kᵀ / √p + b)      (T, S), each entry on its own: no row sums to 1
//   head    = weights V
//
// with b = −log S by default (the paper's choice: at initialisation the
// weights of a row then sum to about 1, as softmax's do), or the option
// "sigmoid_bias" fixed. The option is not called "bias": that key of the
// attention section is taken by every family (biases of the projections).
// Masked keys get −∞ before the sigmoid, so weight 0. The projections, the
// head split and merge, the decoding cache and the masks are softmax
// attention's (nn/attention/softmax_attention.h, heads.h): only the weights
// differ. Because nothing normalises a row, a decode through the cache
// equals the full forward exactly — once b is fixed: the default −log S
// would change as keys arrive, so a cached forward without sigmoid_bias is
// refused.
//
// Load it with `keystone train --plugin libsigmoid_attention.so` and set
// "model": {"attention": {"type": "sigmoid"}}; the run folder keeps the
// plugin's path, so eval, generate and analyze load it again
// (tests/check_examples.sh trains and evaluates one).
// Not here: the plugin mechanism (models/plugin.h), the flash form of the paper.
#include <cmath>
#include <optional>

#include <nlohmann/json.hpp>

#include "autograd/node.h"
#include "models/plugin.h"
#include "nn/attention/heads.h"
#include "nn/attention/softmax_attention.h"
#include "nn/user_input.h"
#include "ops/compare.h"
#include "ops/elementwise.h"
#include "ops/linalg.h"
#include "ops/unary.h"
#include "ops/view.h"

KS_PLUGIN("sigmoid-attention");

namespace {

using ks::Tensor;

struct SigmoidOptions : ks::nn::AttentionOptions {
  std::optional<double> bias;  // b; none: −log S, S the keys a query's row spans

  static SigmoidOptions parse(const nlohmann::json& section, const std::string& where) {
    SigmoidOptions o;
    if (section.contains("sigmoid_bias") && !section.at("sigmoid_bias").is_null()) {
      double b = 0;
      ks::nn::read_json_key(section, "sigmoid_bias", b, where);
      o.bias = b;
    }
    return o;
  }
  static std::vector<ks::KeyDoc> option_keys() {
    return {{"sigmoid_bias", "b in sigmoid(q·k/√p + b); null: −log S, S the number of keys"}};
  }
  nlohmann::json to_json() const override { return {{"sigmoid_bias", bias ? nlohmann::json(*bias) : nullptr}}; }
  void validate(const ks::nn::AttentionConfig&) const override {
    KS_CHECK(!bias || std::isfinite(*bias), "attention.sigmoid_bias must be finite, got ", *bias);
  }
};

// Softmax attention's layer (its q, k, v, o projections and weight dropout), with sigmoid weights.
class SigmoidAttention : public ks::nn::MultiHeadAttention {
 public:
  explicit SigmoidAttention(const ks::nn::AttentionConfig& cfg) : MultiHeadAttention(cfg, "SigmoidAttention") {}
  using Attention::forward;
  Tensor forward(const Tensor& query, const Tensor& key, const Tensor& value, const ks::nn::AttentionMask& mask,
                 ks::nn::AttentionCache* cache) override {
    ks::nn::check_attention_inputs(config, query, key, value, mask, cache);
    const std::optional<double> fixed_bias = config.options_as<SigmoidOptions>().bias;
    KS_CHECK(!cache || fixed_bias, "attention 'sigmoid': decoding through a cache needs attention.sigmoid_bias set ",
             "(the default -log S changes as keys arrive)");
    const int64_t h = config.heads, p = config.resolved_head_dim(), B = query.size(0), T = query.size(1);
    const Tensor qh = ks::nn::split_heads(q->forward(query), h, p);  // (B, h, T, p)
    const ks::nn::CachedKeys kv = ks::nn::keys_through_cache(
        cache,
        [&] {
          return std::pair{ks::nn::split_heads(k->forward(key), h, p), ks::nn::split_heads(v->forward(value), h, p)};
        },
        mask.key_padding, B, 2, query.device());  // k, v (B, h, S, p)
    const int64_t S = kv.k.size(2);
    const double b = fixed_bias ? *fixed_bias : -std::log(double(S));
    Tensor scores = ks::add(ks::matmul(ks::mul(qh, 1.0 / std::sqrt(double(p))), ks::transpose(kv.k, -1, -2)), b);
    if (return_weights) record().scores = ks::detach(scores);  // (B, h, T, S), what keystone analyze reads
    const Tensor masked = ks::nn::attention_mask({mask.causal, kv.key_padding}, B, T, S, kv.offset, query.device());
    if (masked.defined()) scores = ks::masked_fill(scores, masked, -INFINITY);
    Tensor weights = ks::sigmoid(scores);  // (B, h, T, S)
    if (return_weights) record().weights = ks::detach(weights);
    weights = attn_drop->forward(weights);
    return o->forward(ks::nn::gate_and_merge_heads(*this, ks::matmul(weights, kv.v)));  // (B, T, d)
  }
};

std::shared_ptr<ks::nn::Attention> make_sigmoid(const ks::nn::AttentionConfig& cfg) {
  return std::make_shared<SigmoidAttention>(cfg);
}

// Softmax attention's cost: the same projections, T·S weights, a cache of k and v.
ks::nn::AttentionCost sigmoid_cost(const ks::nn::AttentionConfig& cfg, int64_t seq_len, bool causal) {
  const int64_t d = cfg.d_model, kv = cfg.resolved_kv_dim(), inner = cfg.heads * cfg.resolved_head_dim();
  const double keys = causal ? (double(seq_len) + 1) / 2 : double(seq_len);
  return {.params = 2 * inner * (d + kv) + (cfg.bias ? 3 * inner : 0) + (cfg.resolved_out_bias() ? d : 0),
          .flops_per_token = 4.0 * inner * (d + kv) + 4.0 * keys * double(inner),
          .cache_floats_per_position = 2.0 * double(inner)};
}

}  // namespace

KS_REGISTER_ATTENTION("sigmoid", SigmoidOptions, make_sigmoid, sigmoid_cost);
