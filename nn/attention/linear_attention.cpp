// nn/attention/linear_attention.cpp — linear attention and MLK: projections,
// feature maps, the sums of keys, and the decoding cache.
#include "nn/attention/linear_attention.h"

#include "autograd/grad_mode.h"
#include "core/factory.h"
#include "nn/attention/heads.h"
#include "nn/user_input.h"
#include "ops/compare.h"
#include "ops/elementwise.h"
#include "ops/linalg.h"
#include "ops/linear_attention.h"
#include "ops/reduce.h"
#include "ops/softmax.h"
#include "ops/unary.h"
#include "ops/view.h"

namespace ks::nn {
namespace {

Tensor feature_map(const Tensor& x) { return add(elu(x), 1.0); }  // φ(x) = elu(x) + 1 > 0

}  // namespace

MlkOptions MlkOptions::parse(const nlohmann::json& section, const std::string& where) {
  MlkOptions o;
  read_json_key(section, "keys", o.keys, where);
  return o;
}

std::vector<KeyDoc> MlkOptions::option_keys() { return {{"keys", "Gaussian keys per head (M)"}}; }

nlohmann::json MlkOptions::to_json() const { return {{"keys", keys}}; }

namespace {
// RoFormer's linear form (rotated φ(q)·φ(k) in the numerator, the unrotated
// sums in the denominator) is not implemented: its rotated numerator cannot go
// through ops/linear_attention.h's one prefix scan, which shares its keys with
// the denominator. Refused by name rather than silently unrotated.
void refuse_rope(const AttentionConfig& cfg) {
  KS_CHECK(cfg.rope_theta == 0, "attention.rope_theta: the \"", cfg.type, "\" family does not take rotary ",
           "embeddings (positions \"rope\"); use softmax, fixed, mgk or smgk, or positions learned/sinusoidal");
}
}  // namespace

void MlkOptions::validate(const AttentionConfig& cfg) const {
  KS_CHECK(keys >= 1, "attention.keys must be >= 1, got ", keys);
  refuse_rope(cfg);
}

LinearAttention::LinearAttention(const AttentionConfig& cfg, bool mixture)
    : Attention(cfg, mixture ? "MixtureLinearAttention" : "LinearAttention"),
      num_keys(mixture ? cfg.options_as<MlkOptions>().keys : 1) {
  const int64_t inner = cfg.heads * cfg.resolved_head_dim();
  q = register_module("q", std::make_shared<Linear>(cfg.d_model, inner, cfg.bias));
  k = register_module("k", std::make_shared<Linear>(cfg.resolved_kv_dim(), num_keys * inner, cfg.bias));
  v = register_module("v", std::make_shared<Linear>(cfg.resolved_kv_dim(), inner, cfg.bias));
  o = register_module("o", std::make_shared<Linear>(inner, cfg.d_model, cfg.resolved_out_bias()));
  if (mixture) pi_logits = register_parameter("pi_logits", zeros({cfg.heads, num_keys}));
}

std::vector<std::string> LinearAttention::no_weight_decay() const {
  if (pi_logits.defined()) return {"pi_logits"};
  return {};
}

Tensor LinearAttention::mixture() const { return pi_logits.defined() ? softmax(pi_logits, -1) : Tensor(); }

std::optional<KeyMixture> LinearAttention::key_mixture() const {
  if (num_keys == 1) return std::nullopt;
  return KeyMixture{.keys = num_keys, .pi = mixture()};
}

Tensor LinearAttention::forward(const Tensor& query, const Tensor& key, const Tensor& value, const AttentionMask& mask,
                                AttentionCache* cache) {
  check_attention_inputs(config, query, key, value, mask, cache);
  SharedLinearInput share;  // q, k and v of one input save one bf16 copy of it (ops/linalg.h)
  const char* who = config.type.c_str();
  const int64_t h = config.heads, p = config.resolved_head_dim(), M = num_keys;
  const int64_t B = query.size(0), T = query.size(1);
  const bool had_keys = cache && cache->length > 0;
  const bool reuse = had_keys && cache->is_static;
  KS_CHECK(!(mask.causal && cache && cache->is_static), who,
           " attention: causal masking cannot use a static (cross-attention) cache");
  KS_CHECK(!(return_weights && had_keys), who, " attention: return_weights needs the keys, but the cache keeps only ",
           "their sums (", cache ? cache->length : 0, " keys so far); compute weights without a cache");
  if (had_keys)
    KS_CHECK(cache->state.defined() && cache->state.sizes() == Shape({B, h, p, p}) && cache->norm.defined() &&
                 cache->norm.sizes() == Shape({B, h, p}),
             who, " attention: the cache must hold state (", B, ", ", h, ", ", p, ", ", p, ") and norm (", B, ", ", h,
             ", ", p, ") sums, got state ", cache->state.defined() ? describe(cache->state) : "undefined",
             " (was it filled by another attention family?)");

  Tensor fq = feature_map(split_heads(q->forward(query), h, p));  // (B, h, T, p)
  Tensor fk, vh;                                                  // (B, h, S, p), this call's keys
  if (!reuse) {
    const int64_t S = key.size(1);
    Tensor kp = k->forward(key);  // (B, S, M·h·p), key r's projection in block r
    if (M == 1) {
      fk = feature_map(split_heads(kp, h, p));
    } else {
      // φ̄(k_j) = Σ_r π_r φ(k_jr), with π (h, M) laid out as (1, 1, M, h, 1).
      Tensor pi = reshape(transpose(mixture(), 0, 1), {1, 1, M, h, 1});
      Tensor mixed = sum(mul(feature_map(view(kp, {B, S, M, h, p})), pi), {2});  // (B, S, h, p)
      fk = transpose(mixed, 1, 2);
    }
    vh = split_heads(v->forward(value), h, p);
    if (mask.key_padding.defined()) {
      KS_CHECK(mask.key_padding.size(1) == S, who, " attention: key_padding covers ", mask.key_padding.size(1),
               " keys but this call adds ", S, " (with a cache it covers only the new keys)");
      Tensor pad = view(mask.key_padding, {B, 1, S, 1});
      fk = masked_fill(fk, pad, 0.0);
      vh = masked_fill(vh, pad, 0.0);
    }
    KS_CHECK(!mask.causal || S == T, who, " attention: causal attention needs one new key per query, got ", T,
             " queries and ", S, " keys");
  }

  // Σ_j φ(k_j) v_jᵀ (B, h, p, p) and Σ_j φ(k_j) (B, h, p) over every key seen so
  // far: what non-causal queries read and what the cache keeps.
  Tensor state, norm;
  if (reuse) {
    state = cache->state;
    norm = cache->norm;
  } else if (!mask.causal || cache) {
    state = matmul(transpose(fk, -1, -2), vh);
    norm = sum(fk, {2});
    if (had_keys) {
      state = add(cache->state, state);
      norm = add(cache->norm, norm);
    }
  }

  Tensor heads_out;  // (B, h, T, p)
  if (mask.causal)
    heads_out = causal_linear_attention(fq, fk, vh, had_keys ? cache->state : Tensor(),
                                        had_keys ? cache->norm : Tensor(), kEps);
  else
    heads_out = div(matmul(fq, state), add(matmul(fq, unsqueeze(norm, -1)), kEps));

  if (return_weights) {
    NoGradGuard no_grad;
    const int64_t S = fk.size(2);
    Tensor scores = matmul(fq, transpose(fk, -1, -2));  // (B, h, T, S); padded keys are already 0
    if (mask.causal) scores = masked_fill(scores, attention_mask({true, Tensor()}, B, T, S, 0, query.device()), 0.0);
    record().scores = scores;
    record().weights = div(scores, add(sum(scores, {3}, true), kEps));
  }
  if (cache && !reuse) {
    cache->state = state;
    cache->norm = norm;
    cache->length += fk.size(2);
  }
  return o->forward(gate_and_merge_heads(*this, heads_out));  // (B, T, d)
}

namespace {

// "linear": no options.
struct LinearOptions : AttentionOptions {
  static LinearOptions parse(const nlohmann::json&, const std::string&) { return {}; }
  static std::vector<KeyDoc> option_keys() { return {}; }
  nlohmann::json to_json() const override { return nlohmann::json::object(); }
  void validate(const AttentionConfig& cfg) const override { refuse_rope(cfg); }
};

std::shared_ptr<Attention> make_linear(const AttentionConfig& cfg) {
  return std::make_shared<LinearAttention>(cfg, false);
}
std::shared_ptr<Attention> make_mlk(const AttentionConfig& cfg) { return std::make_shared<LinearAttention>(cfg, true); }

// M: 1 for "linear"; mlk: the π logits and the mixing of M key features (even at M = 1).
AttentionCost cost(const AttentionConfig& cfg, int64_t M, bool mlk) {
  const int64_t d = cfg.d_model, kv = cfg.resolved_kv_dim(), p = cfg.resolved_head_dim();
  const int64_t inner = cfg.heads * p;
  AttentionCost c;
  const int64_t weights = inner * d + M * inner * kv + inner * kv + inner * d;
  c.params = weights + (cfg.bias ? (M + 2) * inner : 0) + (cfg.resolved_out_bias() ? d : 0) + (mlk ? cfg.heads * M : 0);
  // Per token, whatever the length and causal or not: its key adds φ(k) vᵀ
  // and φ(k) into the sums, its query reads them (p·p + p multiply-adds each,
  // per head); MLK first mixes M key features.
  c.flops_per_token = 2.0 * weights + 2.0 * 2 * (double(inner) * p + inner) + (mlk ? 2.0 * M * inner : 0.0);
  c.cache_floats_fixed = double(inner) * p + double(inner);  // Σ φ(k) vᵀ (h, p, p) and Σ φ(k) (h, p)
  return c;
}
AttentionCost linear_cost(const AttentionConfig& cfg, int64_t, bool) { return cost(cfg, 1, false); }
AttentionCost mlk_cost(const AttentionConfig& cfg, int64_t, bool) {
  return cost(cfg, cfg.options_as<MlkOptions>().keys, true);
}

}  // namespace

KS_REGISTER_ATTENTION("linear", LinearOptions, make_linear, linear_cost, 2);
KS_REGISTER_ATTENTION("mlk", MlkOptions, make_mlk, mlk_cost, 5);

}  // namespace ks::nn
