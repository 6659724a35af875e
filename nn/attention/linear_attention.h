// nn/attention/linear_attention.h — the linear family: linear attention
// (Katharopoulos et al., "Transformers are RNNs") and its mixture-of-keys form
// MLK (the linear variant of MGK, Nguyen et al.).
//
//   Q = x W_q, K = m W_k, V = m W_v, φ(x) = elu(x) + 1 (elementwise, per head)
//   "linear":  out_i = φ(q_i)ᵀ Σ_j φ(k_j) v_jᵀ / (φ(q_i)ᵀ Σ_j φ(k_j) + ε)
//   "mlk":     the same with the effective key feature φ̄(k_j) = Σ_r π_r φ(k_jr):
//              M keys per position (one Linear of width M·h·p, block r being
//              key r's own projection), π = softmax over r of a learned (h, M)
//              parameter `pi_logits`, zeros at start (π_r = 1/M)
//   out = concat(heads) W_o
// with ε = 1e-6 (kEps): it only keeps a query that sees no key (every key
// padded) at exactly 0 instead of 0/0; φ > 0 makes the real denominator
// positive and of order (number of keys)·p, so ε does not shift it visibly.
//
// Non-causal: two batched matmuls per head over the (p, p) sum Σ_j φ(k_j) v_jᵀ.
// Causal (j <= i): running sums in O(T), the fused causal_linear_attention op
// (ops/linear_attention.h); causal calls need one new key per query.
// Key padding: a padded key's φ(k_j) and v_j are zeroed, so it adds nothing.
//
// Incremental decoding: the cache keeps only the sums — state Σ φ(k) vᵀ
// (B, h, p, p), norm Σ φ(k) (B, h, p), length the keys seen — and each call
// adds its keys (a padding mask, if any, covers just those keys). A static
// (cross-attention) cache forms the memory's sums on its first call; later
// calls reuse them and ignore key_padding (it was applied when they were formed).
//
// return_weights stores the (B, h, T, S) matrix A_ij = φ(q_i)ᵀφ̄(k_j) / (Σ_j ... + ε)
// (masked entries 0; A V equals the attention output). It needs the keys, so
// it is refused once a cache holds sums of earlier keys.
//
// No attention dropout: the family never forms the weights it would drop, so
// config.dropout is ignored. Options: "linear" has none; "mlk" has MlkOptions
// (its M, "keys").
// Parameters: h·p·(2d + 2·kv) weights and 3·h·p + d biases for "linear"; "mlk"
// has M key projections, h·p·(2d + (M + 1)·kv) weights, (M + 2)·h·p + d biases
// and h·M mixing logits.
#pragma once

#include <memory>

#include "nn/attention/attention.h"
#include "nn/layers.h"

namespace ks::nn {

// "mlk"'s options, the attention section's "keys".
struct MlkOptions : AttentionOptions {
  int64_t keys = 2;  // M, the keys per position

  static MlkOptions parse(const nlohmann::json& section, const std::string& where);
  static std::vector<KeyDoc> option_keys();
  nlohmann::json to_json() const override;
  void validate(const AttentionConfig& cfg) const override;
};

class LinearAttention : public Attention {
 public:
  static constexpr double kEps = 1e-6;

  // mixture: "mlk", M = MlkOptions::keys keys per position and the π logits.
  LinearAttention(const AttentionConfig& cfg, bool mixture);
  using Attention::forward;
  Tensor forward(const Tensor& query, const Tensor& key, const Tensor& value, const AttentionMask& mask = {},
                 AttentionCache* cache = nullptr) override;

  // The mixing weights π (h, M), softmax over M of pi_logits; "mlk" only.
  Tensor mixture() const;
  // "mlk": M keys, π = mixture(), mixed inside the sums (record().scores is
  // the mixture's, (B, h, T, S)); "linear": none.
  std::optional<KeyMixture> key_mixture() const override;
  // π's logits are not decayed (decay would pull π to uniform).
  std::vector<std::string> no_weight_decay() const override;

  std::shared_ptr<Linear> q, k, v, o;
  Tensor pi_logits;        // (h, M), "mlk" only
  const int64_t num_keys;  // M: 1 for "linear"
};

}  // namespace ks::nn
