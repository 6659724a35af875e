// nn/attention/mgk_attention.h — attention with a mixture of Gaussian keys
// (Nguyen et al., "Improving Transformers with Probabilistic Attention Keys"):
// types "mgk" and "smgk".
//
// Each key position j carries M keys k_j1..k_jM (MgkOptions::keys), and
// query i attends to j in proportion to a Gaussian mixture likelihood:
//   A_ij ∝ Σ_r π_r exp(−‖q_i − k_jr‖² / 2σ²),   normalised over the visible j,
// per head, with σ² = √p (or MgkOptions::sigma2 when > 0). Then, as in
// softmax attention, out = concat_heads(A V) W_o.
//   "mgk":  M key projections, k_jr = m_j W_k^(r). They are one Linear `k` of
//           width M·h·p whose weight stacks them: rows [r·h·p, (r+1)·h·p)
//           are W_k^(r), laid out by head like q's.
//   "smgk": one key projection plus M learned shifts per head, k_jr = k_j − μ_r;
//           `mu` (h, M, p) starts at N(0, 0.02²) — small, so every component
//           starts near the unshifted key, but not zero, or the M components
//           would get equal gradients and never separate (shift_init
//           "official": μ_1 = 0 and the others N(0, 0.5²), as the MGK code).
// Mixing weights π (h, M), one set per head:
//   learned (default): `pi_logits` (h, M), zeros at start, π = softmax over M;
//   learn_pi false:    π fixed at 1/M, so no π at all (the official hard-E);
//   hard_e:            max over r of log π_r − ‖q − k_r‖²/2σ² replaces the
//                      log-sum-exp (each key uses its best component only);
//                      Keystone keeps the learned log π inside the max, the
//                      official code has none (hard_e with learn_pi false);
//   soft_e:            π is an EM estimate, not a parameter: the buffer `pi`
//                      (h, M), 1/M at start, moves after each training forward
//                      towards the mean posterior responsibility
//                        γ_ijr = π_r N(q_i | k_jr) / Σ_r' π_r' N(q_i | k_jr')
//                      over batch, queries and visible keys of that head:
//                        π ← (1 − pi_momentum)·π + pi_momentum·mean γ
//                      (an exponential moving average, as BatchNorm keeps its
//                      statistics; MgkOptions::pi_momentum, 0.1 by
//                      default, 1 in the official code). Eval mode never updates it.
// Computed by the fused ops/mixture_attention.h (no (B, h, T, M, S) scores or
// (B, h, T, S) weights in memory, forward or backward; soft-E's totals come
// from its tiles); when return_weights is set, by the composed matmul →
// mixture_softmax → dropout → matmul, which fills record().weights — the same
// values, gradients and dropout masks.
// Attention dropout (AttentionConfig::dropout) acts on A. Decoding caches hold
// keys (B, h, M, S, p) — the shifted keys for smgk — and values (B, h, S, p).
// Parameters (kv_dim = d): mgk (M + 3)·h·p·d + (M + 2)·h·p + d + h·M (π
// logits, absent with soft_e); smgk 4·h·p·d + 3·h·p + d + h·M·p (+ h·M).
// Not here: the linear-attention form of MGK ("mlk").
#pragma once

#include <memory>

#include "nn/attention/attention.h"
#include "nn/layers.h"

namespace ks::nn {

// "mgk"'s options: the attention section's keys of the same names.
struct MgkOptions : AttentionOptions {
  int64_t keys = 2;     // M, the keys per position
  bool hard_e = false;  // max over the M keys instead of the π-weighted sum
  bool soft_e = false;  // π re-estimated from posterior responsibilities (a buffer), not learned
  double sigma2 = 0;    // 0 means sqrt(p), the papers' choice
  // σ² per key component (M values > 0), e.g. the official language model's
  // {√p, √p/3}; empty: every component uses sigma2.
  std::vector<double> sigma2_keys{};
  // false fixes π at 1/M, which drops it from the logits (the official
  // hard-E has no π); needs learned π, so not with soft_e.
  bool learn_pi = true;
  // soft_e: the step of π towards each training batch's mean responsibilities
  // (1: replace π by that estimate, the official MGK code's rule)
  static constexpr double kDefaultPiMomentum = 0.1;
  double pi_momentum = kDefaultPiMomentum;

  static MgkOptions parse(const nlohmann::json& section, const std::string& where);
  static std::vector<KeyDoc> option_keys();
  nlohmann::json to_json() const override;
  void validate(const AttentionConfig& cfg) const override;
};

// "smgk"'s options: MGK's and how the shifts start.
struct SmgkOptions : MgkOptions {
  // "small": every μ_r ~ N(0, 0.02²); "official": μ_1 = 0 and μ_r ~ N(0, 0.5²)
  // for r >= 2 (the MGK code's), so the components differ from the first step.
  std::string shift_init = "small";

  static SmgkOptions parse(const nlohmann::json& section, const std::string& where);
  static std::vector<KeyDoc> option_keys();
  nlohmann::json to_json() const override;
  void validate(const AttentionConfig& cfg) const override;
};

class MixtureKeyAttention : public Attention {
 public:
  // shifted: "smgk" (config's options SmgkOptions), else "mgk".
  MixtureKeyAttention(const AttentionConfig& cfg, bool shifted);
  using Attention::forward;
  Tensor forward(const Tensor& query, const Tensor& key, const Tensor& value, const AttentionMask& mask = {},
                 AttentionCache* cache = nullptr) override;

  // log π (h, M): from pi_logits, or from the soft-E buffer pi (no gradient).
  Tensor log_pi() const;
  // 1/σ_r² per component (M values; all equal unless sigma2_keys is set):
  // the scale of q·k_r in the logits, half of it that of −‖k_r‖².
  std::vector<double> inverse_sigma2() const;
  // M keys, π = exp(log_pi()), component logits in record().scores and the
  // keys in record().keys; hard_max under hard E.
  std::optional<KeyMixture> key_mixture() const override;
  // π's logits and the shifts μ are not decayed: decay would pull π to
  // uniform and the components together (the official MGK code does not
  // decay them either).
  std::vector<std::string> no_weight_decay() const override;

  const MgkOptions& options;  // config's, typed

  std::shared_ptr<Linear> q, k, v, o;
  Tensor pi_logits;  // (h, M) parameter; undefined with soft_e
  Tensor pi;         // (h, M) buffer; soft_e only
  Tensor mu;         // (h, M, p) parameter; smgk only
  std::shared_ptr<Dropout> attn_drop;
  const bool shifted;  // smgk
};

}  // namespace ks::nn
