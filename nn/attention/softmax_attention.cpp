// nn/attention/softmax_attention.cpp — scaled dot-product attention per head:
// the fused ops/attention.h op, or, when return_weights asks for the
// probabilities, the composed matmul (+ ALiBi) → mask → softmax → dropout →
// matmul. With kv_heads = g < h the K and V projections are g·p wide and each
// key/value head serves h / g query heads (the op reads them grouped; the
// composed path broadcasts, ops/attention_in_ops.h: matmul_kv_heads).
#include "nn/attention/softmax_attention.h"

#include <cmath>

#include "autograd/node.h"
#include "core/factory.h"
#include "nn/attention/heads.h"
#include "nn/attention/rope.h"
#include "ops/attention.h"
#include "ops/attention_in_ops.h"
#include "ops/compare.h"
#include "ops/elementwise.h"
#include "ops/linalg.h"
#include "ops/softmax.h"
#include "ops/view.h"

namespace ks::nn {

MultiHeadAttention::MultiHeadAttention(const AttentionConfig& cfg, const std::string& type_name)
    : Attention(cfg, type_name) {
  const int64_t inner = cfg.heads * cfg.resolved_head_dim(),
                kv_inner = cfg.resolved_kv_heads() * cfg.resolved_head_dim();
  q = register_module("q", std::make_shared<Linear>(cfg.d_model, inner, cfg.bias));
  k = register_module("k", std::make_shared<Linear>(cfg.resolved_kv_dim(), kv_inner, cfg.bias));
  v = register_module("v", std::make_shared<Linear>(cfg.resolved_kv_dim(), kv_inner, cfg.bias));
  o = register_module("o", std::make_shared<Linear>(inner, cfg.d_model, cfg.resolved_out_bias()));
  attn_drop = register_module("attn_drop", std::make_shared<Dropout>(cfg.dropout));
}

Tensor MultiHeadAttention::forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                   const AttentionMask& mask, AttentionCache* cache) {
  check_attention_inputs(config, query, key, value, mask, cache);
  KS_CHECK(config.window == 0 || mask.causal, type_name(), ": attention.window ", config.window,
           " is a sliding window over causal self-attention; this attention is not causal (an encoder's?)");
  SharedLinearInput share;  // q, k and v of one input save one bf16 copy of it (ops/linalg.h)
  const int64_t h = config.heads, g = config.resolved_kv_heads(), p = config.resolved_head_dim();
  const int64_t B = query.size(0), T = query.size(1);

  const double scale = 1.0 / std::sqrt(double(p));
  const int64_t at = rope_offset(cache);  // rotary positions (nn/attention/rope.h), when rope_theta > 0
  Tensor qh = apply_rope(config, split_heads(q->forward(query), h, p), at);  // (B, h, T, p)
  CachedKeys kv = keys_through_cache(
      cache,
      [&] {
        return std::pair{apply_rope(config, split_heads(k->forward(key), g, p), at),
                         split_heads(v->forward(value), g, p)};
      },
      mask.key_padding, B, 2, query.device());  // k, v (B, g, S, p)

  if (!return_weights) {
    // The fused op: no (B, h, T, S) tensor is formed, forward or backward.
    const SdpaOptions opt{.scale = scale,
                          .causal = mask.causal,
                          .causal_offset = kv.offset,
                          .window = config.window,
                          .alibi = config.alibi,
                          .key_padding = kv.key_padding,
                          .dropout_p = attn_drop->p,
                          .training = attn_drop->is_training()};
    return o->forward(gate_and_merge_heads(*this, scaled_dot_product_attention(qh, kv.k, kv.v, opt)));  // (B, T, d)
  }
  // The weights are wanted: materialise them, op by op, with the fused op's semantics.
  const int64_t S = kv.k.size(2);
  // The scale goes on the queries (T·p values) rather than the scores (T·S).
  Tensor scores = matmul_kv_heads(mul(qh, scale), transpose(kv.k, -1, -2));  // (B, h, T, S)
  if (config.alibi) scores = add(scores, alibi_bias(h, T, S, kv.offset, scores.dtype(), scores.device()));
  record().scores = detach(scores);
  Tensor masked = attention_mask({mask.causal, kv.key_padding}, B, T, S, kv.offset, query.device(), config.window);
  if (masked.defined()) scores = masked_fill(scores, masked, -INFINITY);
  Tensor weights = softmax(scores, -1);  // a fully masked row gives zeros
  record().weights = detach(weights);
  weights = attn_drop->forward(weights);
  return o->forward(gate_and_merge_heads(*this, matmul_kv_heads(weights, kv.v)));  // (B, T, d)
}

namespace {

// What "softmax" and "fixed" share: no keys of their own, and every shared
// option (kv_heads, alibi, window) applies. Each family adds its head_dim rule.
template <class Family> struct NoKeysOptions : AttentionOptions {
  static Family parse(const nlohmann::json&, const std::string&) { return {}; }
  static std::vector<KeyDoc> option_keys() { return {}; }
  nlohmann::json to_json() const override { return nlohmann::json::object(); }
  bool takes_kv_groups() const override { return true; }
  bool takes_alibi() const override { return true; }
  bool takes_window() const override { return true; }
};

// "softmax": head_dim, when given, must be d_model / heads.
struct SoftmaxOptions : NoKeysOptions<SoftmaxOptions> {
  void validate(const AttentionConfig& cfg) const override {
    if (cfg.head_dim > 0)
      KS_CHECK(cfg.head_dim * cfg.heads == cfg.d_model, "attention.head_dim: the \"softmax\" family uses ",
               "d_model / heads = ", cfg.d_model / cfg.heads, "; for head size ", cfg.head_dim, " use type \"fixed\"");
  }
};

// "fixed": the head size is the point, so it is explicit.
struct FixedOptions : NoKeysOptions<FixedOptions> {
  void validate(const AttentionConfig& cfg) const override {
    KS_CHECK(cfg.head_dim > 0, "attention.head_dim: the \"fixed\" family needs an explicit head_dim");
  }
};

std::shared_ptr<Attention> make_mha(const AttentionConfig& cfg) { return std::make_shared<MultiHeadAttention>(cfg); }
std::shared_ptr<Attention> make_fixed(const AttentionConfig& cfg) {
  return std::make_shared<MultiHeadAttention>(cfg, "FixedHeadAttention");
}

// With g = kv_heads < h the K and V projections, and what the cache keeps per
// position, shrink by g / h; the attention products do not (every query head
// still scores every key). ALiBi adds one addition per score.
AttentionCost mha_cost(const AttentionConfig& cfg, int64_t n, bool causal) {
  const int64_t d = cfg.d_model, kv = cfg.resolved_kv_dim(), inner = cfg.heads * cfg.resolved_head_dim();
  const int64_t kv_inner = cfg.resolved_kv_heads() * cfg.resolved_head_dim();
  AttentionCost c;
  c.params = inner * d + 2 * kv_inner * kv + inner * d + (cfg.bias ? inner + 2 * kv_inner : 0) +
             (cfg.resolved_out_bias() ? d : 0);
  // A causal query sees (n + 1) / 2 keys on average; under a window w of them
  // at most: position i sees min(i + 1, w), summed over i < n and divided by n.
  const double w = causal && cfg.window > 0 && cfg.window < n ? double(cfg.window) : 0;
  const double keys = !causal ? double(n)
                      : w > 0 ? (w * (w + 1) / 2 + (double(n) - w) * w) / double(n)
                              : (double(n) + 1) / 2;
  c.flops_per_token = 2.0 * (inner * d + 2 * kv_inner * kv + inner * d)  // projections
                      + 2.0 * 2 * keys * double(inner)                   // QKᵀ and AV
                      + (cfg.alibi ? keys * double(cfg.heads) : 0.0);    // ALiBi's biases
  c.cache_floats_per_position = 2.0 * double(kv_inner);                  // k and v
  return c;
}

}  // namespace

KS_REGISTER_ATTENTION("softmax", SoftmaxOptions, make_mha, mha_cost, 0);
KS_REGISTER_ATTENTION("fixed", FixedOptions, make_fixed, mha_cost, 1);

}  // namespace ks::nn
