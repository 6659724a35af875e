// nn/attention/mgk_attention.cpp — MGK and sMGK attention: projections,
// cache, the bias of the Gaussian mixture, the fused ops/mixture_attention.h
// op (or, when return_weights asks for the weights, the composed matmul →
// mixture_softmax → dropout → matmul) and the soft-E update of π.
#include "nn/attention/mgk_attention.h"

#include <algorithm>
#include <cmath>

#include "autograd/grad_mode.h"
#include "autograd/node.h"
#include "core/copy.h"
#include "core/factory.h"
#include "nn/attention/heads.h"
#include "nn/attention/rope.h"
#include "nn/init.h"
#include "nn/user_input.h"
#include "ops/compare.h"
#include "ops/elementwise.h"
#include "ops/inplace.h"
#include "ops/linalg.h"
#include "ops/mixture.h"
#include "ops/mixture_attention.h"
#include "ops/reduce.h"
#include "ops/shape.h"
#include "ops/softmax.h"
#include "ops/unary.h"
#include "ops/view.h"

namespace ks::nn {

MgkOptions MgkOptions::parse(const nlohmann::json& section, const std::string& where) {
  MgkOptions o;
  read_json_key(section, "keys", o.keys, where);
  read_json_key(section, "hard_e", o.hard_e, where);
  read_json_key(section, "soft_e", o.soft_e, where);
  read_json_key(section, "sigma2", o.sigma2, where);
  if (section.contains("sigma2_keys")) {
    const nlohmann::json& v = section.at("sigma2_keys");
    KS_CHECK(v.is_array(), "config: ", where, "sigma2_keys: expected an array of numbers, got ", json_excerpt(v));
    for (const nlohmann::json& x : v) {
      KS_CHECK(x.is_number(), "config: ", where, "sigma2_keys: expected numbers, got ", json_excerpt(x));
      o.sigma2_keys.push_back(x.get<double>());
    }
  }
  read_json_key(section, "learn_pi", o.learn_pi, where);
  read_json_key(section, "pi_momentum", o.pi_momentum, where);
  return o;
}

std::vector<KeyDoc> MgkOptions::option_keys() {
  return {{"keys", "Gaussian keys per head (M)"},
          {"hard_e", "the max over the M keys instead of the pi-weighted sum"},
          {"soft_e", "pi re-estimated from the responsibilities instead of learned"},
          {"sigma2", "the keys' variance; 0: sqrt(head_dim)"},
          {"sigma2_keys", "one variance per key (M values); empty: sigma2 for all"},
          {"learn_pi", "false fixes pi at 1/M"},
          {"pi_momentum", "soft_e: the step of pi towards each batch's responsibilities, in (0, 1]"}};
}

nlohmann::json MgkOptions::to_json() const {
  return {{"keys", keys},
          {"hard_e", hard_e},
          {"soft_e", soft_e},
          {"sigma2", sigma2},
          {"sigma2_keys", sigma2_keys},
          {"learn_pi", learn_pi},
          {"pi_momentum", pi_momentum}};
}

void MgkOptions::validate(const AttentionConfig&) const {
  KS_CHECK(keys >= 1, "attention.keys must be >= 1, got ", keys);
  KS_CHECK(sigma2 >= 0, "attention.sigma2 must be >= 0 (0 means sqrt(head_dim)), got ", sigma2);
  KS_CHECK(!(hard_e && soft_e), "attention: hard_e and soft_e cannot both be set");
  KS_CHECK(sigma2_keys.empty() || int64_t(sigma2_keys.size()) == keys, "attention.sigma2_keys: ", sigma2_keys.size(),
           " values for ", keys, " keys; give one per key");
  for (double s2 : sigma2_keys)
    KS_CHECK(s2 > 0 && std::isfinite(s2), "attention.sigma2_keys: every value must be positive, got ", s2);
  KS_CHECK(learn_pi || !soft_e, "attention: learn_pi false and soft_e cannot both be set (soft-E estimates π)");
  KS_CHECK(pi_momentum > 0 && pi_momentum <= 1, "attention.pi_momentum must be in (0, 1], got ", pi_momentum);
  KS_CHECK(pi_momentum == kDefaultPiMomentum || soft_e,
           "attention.pi_momentum applies to soft_e only (π is learned otherwise)");
}

SmgkOptions SmgkOptions::parse(const nlohmann::json& section, const std::string& where) {
  SmgkOptions o;
  static_cast<MgkOptions&>(o) = MgkOptions::parse(section, where);
  read_json_key(section, "shift_init", o.shift_init, where);
  return o;
}

std::vector<KeyDoc> SmgkOptions::option_keys() {
  std::vector<KeyDoc> keys = MgkOptions::option_keys();
  keys.push_back({"shift_init", "how the key shifts start: small | official"});
  return keys;
}

nlohmann::json SmgkOptions::to_json() const {
  nlohmann::json j = MgkOptions::to_json();
  j["shift_init"] = shift_init;
  return j;
}

void SmgkOptions::validate(const AttentionConfig& cfg) const {
  MgkOptions::validate(cfg);
  KS_CHECK(shift_init == "small" || shift_init == "official", "attention.shift_init: expected \"small\" or ",
           "\"official\", got '", shift_init, "'");
}

MixtureKeyAttention::MixtureKeyAttention(const AttentionConfig& cfg, bool shifted)
    : Attention(cfg, shifted ? "ShiftedMixtureKeyAttention" : "MixtureKeyAttention"),
      options(config.options_as<MgkOptions>()),
      shifted(shifted) {
  const int64_t h = cfg.heads, p = cfg.resolved_head_dim(), M = options.keys, inner = h * p;
  q = register_module("q", std::make_shared<Linear>(cfg.d_model, inner, cfg.bias));
  k = register_module("k", std::make_shared<Linear>(cfg.resolved_kv_dim(), shifted ? inner : M * inner, cfg.bias));
  v = register_module("v", std::make_shared<Linear>(cfg.resolved_kv_dim(), inner, cfg.bias));
  o = register_module("o", std::make_shared<Linear>(inner, cfg.d_model, cfg.resolved_out_bias()));
  if (options.soft_e)
    pi = register_buffer("pi", full({h, M}, 1.0 / double(M)));
  else if (options.learn_pi)
    pi_logits = register_parameter("pi_logits", zeros({h, M}));
  if (shifted) {
    mu = register_parameter("mu", empty({h, M, p}));
    if (config.options_as<SmgkOptions>().shift_init == "official") {  // μ_1 = 0, the others N(0, 0.5²)
      init::normal_(mu, 0.0, 0.5);
      NoGradGuard no_grad;
      fill_(select(mu, 1, 0), 0.0);
    } else {
      init::normal_(mu, 0.0, 0.02);
    }
  }
  attn_drop = register_module("attn_drop", std::make_shared<Dropout>(cfg.dropout));
}

std::vector<std::string> MixtureKeyAttention::no_weight_decay() const {
  std::vector<std::string> names;
  if (pi_logits.defined()) names.push_back("pi_logits");
  if (mu.defined()) names.push_back("mu");
  return names;
}

Tensor MixtureKeyAttention::log_pi() const {
  if (options.soft_e) return log(pi);
  if (pi_logits.defined()) return log_softmax(pi_logits, -1);
  // π fixed at 1/M, on the module's device and dtype (float32 on the CPU for a Q8_0 q, nn::Q8WeightScope).
  const Tensor& ref = q->weight;
  return full(
      {config.heads, options.keys}, -std::log(double(options.keys)),
      {.dtype = ref.defined() ? ref.dtype() : kFloat32, .device = ref.defined() ? ref.device() : Device::cpu()});
}

std::optional<KeyMixture> MixtureKeyAttention::key_mixture() const {
  return KeyMixture{.keys = options.keys, .pi = exp(log_pi()), .component_scores = true, .hard_max = options.hard_e};
}

std::vector<double> MixtureKeyAttention::inverse_sigma2() const {
  const double base = options.sigma2 > 0 ? options.sigma2 : std::sqrt(double(config.resolved_head_dim()));
  std::vector<double> inv(size_t(options.keys), 1.0 / base);
  for (size_t r = 0; r < options.sigma2_keys.size(); ++r) inv[r] = 1.0 / options.sigma2_keys[r];
  return inv;
}

Tensor MixtureKeyAttention::forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const AttentionMask& mask, AttentionCache* cache) {
  check_attention_inputs(config, query, key, value, mask, cache);
  SharedLinearInput share;  // q, k and v of one input save one bf16 copy of it (ops/linalg.h)
  const int64_t h = config.heads, p = config.resolved_head_dim(), M = options.keys;
  const int64_t B = query.size(0), T = query.size(1);
  const std::vector<double> inv_s2 = inverse_sigma2();
  const bool one_sigma = std::all_of(inv_s2.begin(), inv_s2.end(), [&](double x) { return x == inv_s2[0]; });

  const int64_t at = rope_offset(cache);  // rotary positions (nn/attention/rope.h), when rope_theta > 0
  Tensor qh = apply_rope(config, split_heads(q->forward(query), h, p), at);  // (B, h, T, p)
  CachedKeys kv = keys_through_cache(
      cache,
      [&] {
        const int64_t S = key.size(1);
        Tensor kr;  // (B, h, M, S, p), contiguous: the layout the score GEMM and the cache want
        if (shifted) {
          Tensor kj = unsqueeze(split_heads(k->forward(key), h, p), 2);  // (B, h, 1, S, p)
          kr = sub(kj, view(mu, {1, h, M, 1, p}));
        } else {
          kr = contiguous(permute(view(k->forward(key), {B, S, M, h, p}), {0, 3, 2, 1, 4}));
        }
        // Each key component turns by its position; ‖q − k_r‖² then depends on the distance only.
        return std::pair{apply_rope(config, kr, at), split_heads(v->forward(value), h, p)};
      },
      mask.key_padding, B, 3, query.device());
  const Tensor& kr = kv.k;  // (B, h, M, S, p)
  const int64_t S = kr.size(3);
  // One σ² for every component: the scores q·k_r take the scale 1/σ².
  // Per component, −‖q_i‖²/2σ_r² no longer cancels over r: with the common
  // −‖q_i‖²/2σ_1² dropped (constant over keys), the rest rides on one more
  // feature, q' = [q, ‖q‖²] and k'_r = [k_r/σ_r², −(1/σ_r² − 1/σ_1²)/2], so
  // q'·k'_r = q·k_r/σ_r² − ‖q‖²(1/σ_r² − 1/σ_1²)/2, at score scale 1.
  Tensor inv_col;  // (1, 1, M, 1) of 1/σ_r², per-component σ² only
  Tensor score_queries = qh, score_keys = kr;
  if (!one_sigma) {
    auto constant = [&](const std::vector<double>& v) {
      return ks::to(ks::to(from_vector(v, {1, 1, M, 1}), kr.dtype()), kr.device());
    };
    inv_col = constant(inv_s2);
    std::vector<double> extra(static_cast<size_t>(M));
    for (int64_t r = 0; r < M; ++r) extra[size_t(r)] = -0.5 * (inv_s2[size_t(r)] - inv_s2[0]);
    score_queries = cat({qh, sum(mul(qh, qh), {-1}, true)}, -1);  // (B, h, T, p + 1)
    score_keys = cat({mul(kr, unsqueeze(inv_col, -1)), expand(unsqueeze(constant(extra), -1), {B, h, M, S, 1})},
                     -1);  // (B, h, M, S, p + 1)
  }
  const int64_t ps = score_keys.size(-1);
  const double score_scale = one_sigma ? inv_s2[0] : 1.0;

  // logits_ijr = log π_r − ‖q_i − k_jr‖²/2σ² = log π_r − ‖q_i‖²/2σ² + q_i·k_jr/σ² − ‖k_jr‖²/2σ².
  // ‖q_i‖² is the same for every key j and component r, so it cancels in the
  // softmax over j and is never computed: the attention gets the scores
  // q·k_jr with scale 1/σ², and the per-key bias log π_r − ‖k_jr‖²/2σ².
  // (The tests' loop reference keeps the full distance.)
  Tensor sq = sum(mul(kr, kr), {-1});  // ‖k_jr‖² (B, h, M, S)
  Tensor bias = add(view(log_pi(), {1, h, M, 1}), one_sigma ? mul(sq, -0.5 * inv_s2[0]) : mul(mul(sq, inv_col), -0.5));
  const bool estimate_pi = options.soft_e && is_training();
  Tensor heads_out;    // (B, h, T, p)
  Tensor resp_totals;  // Σ over queries and visible keys of γ (B, h, M); soft-E training only
  if (!return_weights) {
    // The fused op: neither the (B, h, T, M, S) scores nor the (B, h, T, S)
    // weights are formed, forward or backward.
    MixtureAttention fused = mixture_attention(score_queries, score_keys, bias, kv.v,
                                               {.scale = score_scale,
                                                .hard = options.hard_e,
                                                .totals = estimate_pi,
                                                .causal = mask.causal,
                                                .causal_offset = kv.offset,
                                                .key_padding = kv.key_padding,
                                                .dropout_p = attn_drop->p,
                                                .training = attn_drop->is_training()});
    heads_out = fused.out;
    resp_totals = fused.totals;
  } else {
    // The weights are wanted: one GEMM over all M·S keys, mixture_softmax,
    // dropout, weights @ v — the fused op's semantics, op by op.
    Tensor scores =
        view(matmul(score_queries, transpose(reshape(score_keys, {B, h, M * S, ps}), -1, -2)), {B, h, T, M, S});
    Tensor masked = attention_mask({mask.causal, kv.key_padding}, B, T, S, kv.offset, query.device());
    MixtureSoftmax mix = mixture_softmax(scores, bias, score_scale, masked,
                                         {.hard = options.hard_e, .responsibilities = estimate_pi});  // A (B, h, T, S)
    if (estimate_pi) {
      NoGradGuard no_grad;
      resp_totals = sum(mix.responsibilities, {2, 4});  // (B, h, M)
    }
    record().weights = detach(mix.weights);
    record().keys = detach(kr);
    {
      NoGradGuard no_grad;  // each component's logits (B, h, M, T, S)
      record().scores = permute(add(mul(scores, score_scale), unsqueeze(bias, 2)), {0, 1, 3, 2, 4});
    }
    heads_out = matmul(attn_drop->forward(mix.weights), kv.v);
  }

  if (estimate_pi) {
    // E-step statistics: γ is 0 at hidden keys and sums to 1 over r at
    // visible ones, so Σ_r of its totals counts the visible pairs.
    NoGradGuard no_grad;
    Tensor totals = sum(resp_totals, {0});    // (h, M)
    Tensor visible = sum(totals, {1}, true);  // (h, 1)
    Tensor estimate = div(totals, maximum(visible, full_like(visible, 1e-30)));
    // A head that saw no visible key keeps its π.
    Tensor step = where(gt(visible, 0.0), sub(estimate, pi), zeros_like(pi));
    add_(pi, step, options.pi_momentum);
  }
  return o->forward(gate_and_merge_heads(*this, heads_out));  // (B, T, d)
}

namespace {

std::shared_ptr<Attention> make_mgk(const AttentionConfig& cfg) {
  return std::make_shared<MixtureKeyAttention>(cfg, false);
}
std::shared_ptr<Attention> make_smgk(const AttentionConfig& cfg) {
  return std::make_shared<MixtureKeyAttention>(cfg, true);
}

AttentionCost cost(const AttentionConfig& cfg, int64_t n, bool causal, bool shifted) {
  const MgkOptions& opt = cfg.options_as<MgkOptions>();
  const int64_t d = cfg.d_model, kv = cfg.resolved_kv_dim(), h = cfg.heads, p = cfg.resolved_head_dim();
  const int64_t M = opt.keys, inner = h * p;
  const int64_t key_width = shifted ? inner : M * inner;
  AttentionCost c;
  c.params = inner * d + key_width * kv + inner * kv + inner * d + (cfg.bias ? inner + key_width + inner : 0) +
             (cfg.resolved_out_bias() ? d : 0) + (opt.soft_e || !opt.learn_pi ? 0 : h * M) + (shifted ? h * M * p : 0);
  const double keys = causal ? (double(n) + 1) / 2 : double(n);
  c.flops_per_token = 2.0 * (inner * d + key_width * kv + inner * kv + inner * d)  // projections
                      + 2.0 * double(M * inner)                                    // ‖k_jr‖² of this token's keys
                      + 2.0 * keys * double(M * inner)                             // q·k_jr
                      + 2.0 * keys * double(inner);                                // A V
  c.cache_floats_per_position = double((M + 1) * inner);  // M keys (sMGK's shifted ones too) and v
  return c;
}
AttentionCost mgk_cost(const AttentionConfig& cfg, int64_t n, bool causal) { return cost(cfg, n, causal, false); }
AttentionCost smgk_cost(const AttentionConfig& cfg, int64_t n, bool causal) { return cost(cfg, n, causal, true); }

}  // namespace

KS_REGISTER_ATTENTION("mgk", MgkOptions, make_mgk, mgk_cost, 3);
KS_REGISTER_ATTENTION("smgk", SmgkOptions, make_smgk, smgk_cost, 4);

}  // namespace ks::nn
