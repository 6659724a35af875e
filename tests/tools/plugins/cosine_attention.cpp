// tests/tools/plugins/cosine_attention.cpp — a Keystone plugin, built as its own
// shared library (tests/tools/plugins/CMakeLists.txt), that adds the attention
// family "cosine": softmax over the cosine similarity of queries and keys,
// times the family's one option "scale", with keys and values from one
// projection and a decoding cache of normalised keys. tests/tools/test_plugins.sh trains a
// model with it through `keystone train --plugin` and reads the run back with
// eval, generate, analyze and --resume, none of which is told about the plugin.
// Not here: the plugin mechanism (models/plugin.h, core/plugin_loader.h).
#include <cmath>
#include <nlohmann/json.hpp>

#include "autograd/node.h"
#include "models/plugin.h"
#include "nn/attention/attention.h"
#include "nn/attention/heads.h"
#include "nn/layers.h"
#include "nn/user_input.h"
#include "ops/compare.h"
#include "ops/elementwise.h"
#include "ops/linalg.h"
#include "ops/reduce.h"
#include "ops/shape.h"
#include "ops/softmax.h"
#include "ops/unary.h"
#include "ops/view.h"

KS_PLUGIN("cosine-attention");

namespace {

using namespace ks;

struct CosineOptions : nn::AttentionOptions {
  double scale = 10.0;  // the logits are scale · cos(q, k), in [-scale, scale]

  static CosineOptions parse(const nlohmann::json& section, const std::string& where) {
    CosineOptions o;
    nn::read_json_key(section, "scale", o.scale, where);
    return o;
  }
  static std::vector<KeyDoc> option_keys() { return {{"scale", "the factor on cos(q, k), > 0"}}; }
  nlohmann::json to_json() const override { return {{"scale", scale}}; }
  void validate(const nn::AttentionConfig&) const override {
    KS_CHECK(scale > 0 && std::isfinite(scale), "attention.scale must be positive, got ", scale);
  }
};

// x / ‖x‖ over the last dim (the head dim p).
Tensor unit(const Tensor& x) { return mul(x, rsqrt(add(sum(mul(x, x), {-1}, true), 1e-6))); }

class CosineAttention : public nn::Attention {
 public:
  explicit CosineAttention(const nn::AttentionConfig& cfg) : Attention(cfg, "CosineAttention") {
    const int64_t inner = cfg.heads * cfg.resolved_head_dim();
    query_proj = register_module("query_proj", std::make_shared<nn::Linear>(cfg.d_model, inner, cfg.bias));
    kv_proj = register_module("kv_proj", std::make_shared<nn::Linear>(cfg.resolved_kv_dim(), 2 * inner, cfg.bias));
    out_proj = register_module("out_proj", std::make_shared<nn::Linear>(inner, cfg.d_model, cfg.bias));
  }
  using Attention::forward;
  Tensor forward(const Tensor& query, const Tensor& key, const Tensor& value, const nn::AttentionMask& mask,
                 nn::AttentionCache* cache) override {
    nn::check_attention_inputs(config, query, key, value, mask, cache);
    const int64_t h = config.heads, p = config.resolved_head_dim(), B = query.size(0), T = query.size(1);
    const nn::CachedKeys kv = nn::keys_through_cache(
        cache,
        [&] {
          const std::vector<Tensor> both = chunk(kv_proj->forward(key), 2, -1);  // 2 × (B, S, h·p)
          return std::pair{unit(nn::split_heads(both[0], h, p)), nn::split_heads(both[1], h, p)};
        },
        mask.key_padding, B, 2, query.device());                               // k, v (B, h, S, p)
    const Tensor q = unit(nn::split_heads(query_proj->forward(query), h, p));  // (B, h, T, p)
    Tensor scores = mul(matmul(q, transpose(kv.k, -1, -2)), config.options_as<CosineOptions>().scale);  // (B, h, T, S)
    const Tensor masked = nn::attention_mask({.causal = mask.causal, .key_padding = kv.key_padding}, B, T, kv.k.size(2),
                                             kv.offset, query.device());
    if (return_weights) record().scores = detach(scores);  // what keystone analyze reads (nn/attention/attention.h)
    if (masked.defined()) scores = masked_fill(scores, masked, -INFINITY);
    const Tensor weights = softmax(scores, -1);
    if (return_weights) record().weights = detach(weights);
    return out_proj->forward(nn::gate_and_merge_heads(*this, matmul(weights, kv.v)));  // (B, T, d)
  }

  std::shared_ptr<nn::Linear> query_proj, kv_proj, out_proj;
};

std::shared_ptr<nn::Attention> make_cosine(const nn::AttentionConfig& cfg) {
  return std::make_shared<CosineAttention>(cfg);
}

nn::AttentionCost cosine_cost(const nn::AttentionConfig& cfg, int64_t seq_len, bool causal) {
  const int64_t d = cfg.d_model, inner = cfg.heads * cfg.resolved_head_dim(), kv = cfg.resolved_kv_dim();
  const double keys = causal ? seq_len / 2.0 : double(seq_len);
  return {.params = (d + 2 * kv + inner) * inner + (cfg.bias ? 3 * inner + d : 0),
          .flops_per_token = 2.0 * (d * inner + 2 * kv * inner + inner * d) + 4.0 * keys * inner};
}

}  // namespace

KS_REGISTER_ATTENTION("cosine", CosineOptions, make_cosine, cosine_cost);
