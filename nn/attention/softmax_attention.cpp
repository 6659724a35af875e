// nn/attention/softmax_attention.cpp — scaled dot-product attention per head.
#include "nn/attention/softmax_attention.h"

#include <cmath>

#include "autograd/node.h"
#include "core/factory.h"
#include "nn/attention/heads.h"
#include "ops/compare.h"
#include "ops/elementwise.h"
#include "ops/linalg.h"
#include "ops/softmax.h"
#include "ops/view.h"

namespace ks::nn {

MultiHeadAttention::MultiHeadAttention(const AttentionConfig& cfg)
    : Attention(cfg, cfg.type == "fixed" ? "FixedHeadAttention" : "MultiHeadAttention") {
  const int64_t inner = cfg.heads * cfg.resolved_head_dim();
  q = register_module("q", std::make_shared<Linear>(cfg.d_model, inner, cfg.bias));
  k = register_module("k", std::make_shared<Linear>(cfg.resolved_kv_dim(), inner, cfg.bias));
  v = register_module("v", std::make_shared<Linear>(cfg.resolved_kv_dim(), inner, cfg.bias));
  o = register_module("o", std::make_shared<Linear>(inner, cfg.d_model, cfg.bias));
  attn_drop = register_module("attn_drop", std::make_shared<Dropout>(cfg.dropout));
}

Tensor MultiHeadAttention::forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                   const AttentionMask& mask, AttentionCache* cache) {
  check_attention_inputs(config, query, key, value, mask, cache);
  const int64_t h = config.heads, p = config.resolved_head_dim();
  const int64_t B = query.size(0), T = query.size(1);

  Tensor qh = split_heads(q->forward(query), h, p);  // (B, h, T, p)
  Tensor kh, vh;                                    // (B, h, S, p)
  Tensor key_padding = mask.key_padding;
  int64_t offset = 0;  // keys that precede this call's queries
  if (cache && cache->is_static && cache->length > 0) {
    kh = cache->k;
    vh = cache->v;
    if (!key_padding.defined()) key_padding = cache->key_padding;
  } else {
    kh = split_heads(k->forward(key), h, p);
    vh = split_heads(v->forward(value), h, p);
    if (cache) {
      offset = cache->is_static ? 0 : cache->length;
      if (!cache->is_static) {
        kh = append_to_cache(cache->k, kh, 2);
        vh = append_to_cache(cache->v, vh, 2);
        if (key_padding.defined() || cache->key_padding.defined()) {
          Tensor fresh = key_padding.defined() ? key_padding : zeros({B, key.size(1)}, {.dtype = kBool});
          Tensor old = cache->key_padding.defined() || cache->length == 0
                           ? cache->key_padding
                           : zeros({B, cache->length}, {.dtype = kBool});
          key_padding = append_to_cache(old, fresh, 1);
        }
      }
      cache->k = kh;
      cache->v = vh;
      cache->key_padding = key_padding;
      cache->length = kh.size(2);
    }
  }
  const int64_t S = kh.size(2);

  Tensor scores = mul(matmul(qh, transpose(kh, -1, -2)), 1.0 / std::sqrt(double(p)));  // (B, h, T, S)
  AttentionMask effective{mask.causal, key_padding};
  Tensor masked = attention_mask(effective, B, T, S, offset, query.device());
  if (masked.defined()) scores = masked_fill(scores, masked, -INFINITY);
  Tensor weights = softmax(scores, -1);  // a fully masked row gives zeros
  if (return_weights) last_weights = detach(weights);
  weights = attn_drop->forward(weights);
  return o->forward(merge_heads(matmul(weights, vh)));  // (B, T, d)
}

namespace {

std::shared_ptr<Attention> make_mha(const AttentionConfig& cfg) { return std::make_shared<MultiHeadAttention>(cfg); }

AttentionCost mha_cost(const AttentionConfig& cfg, int64_t n, bool causal) {
  const int64_t d = cfg.d_model, kv = cfg.resolved_kv_dim(), inner = cfg.heads * cfg.resolved_head_dim();
  AttentionCost c;
  c.params = inner * d + 2 * inner * kv + inner * d + (cfg.bias ? 3 * inner + d : 0);
  const double keys = causal ? (double(n) + 1) / 2 : double(n);
  c.flops_per_token = 2.0 * (inner * d + 2 * inner * kv + inner * d)  // projections
                      + 2.0 * 2 * keys * double(inner);               // QKᵀ and AV
  return c;
}

}  // namespace

KS_REGISTER_ATTENTION("softmax", make_mha, mha_cost);
KS_REGISTER_ATTENTION("fixed", make_mha, mha_cost);

}  // namespace ks::nn
