// nn/attention/attention.h — the one interface all attention families share.
//
//   query (B, T, d_model), key and value (B, S, kv_dim)  ->  (B, T, d_model)
//
// Families (AttentionConfig::type), their math in ../shared/DESIGN.md:
//   "softmax"  multi-head softmax attention (Vaswani et al.), head size d/h
//   "fixed"    the same layer with the head size p set independently of h and d
//              (Bhojanapalli et al., "Low-Rank Bottleneck"); h need not divide d
//   "mgk"      mixture of Gaussian keys (Nguyen et al.): M keys per position,
//              each from its own projection, mixing weights π per head
//   "smgk"     MGK with one key projection plus M learned shifts k_jr = k_j − μ_r
//   "linear"   linear attention, φ(x) = elu(x) + 1, causal by prefix sums
//   "mlk"      the mixture-of-keys form of linear attention
// Masks: causal and/or key padding (AttentionMask). Incremental decoding goes
// through an AttentionCache: projected keys/values (softmax family, MGK) or
// the running sums (linear family) grow one step at a time, and the output
// equals full recomputation.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/dispatch.h"
#include "nn/module.h"

namespace ks::nn {

struct AttentionConfig {
  std::string type = "softmax";
  int64_t d_model = 0;   // query width, and the output width
  int64_t kv_dim = 0;    // key/value input width (cross-attention); 0: d_model
  int64_t heads = 8;
  int64_t head_dim = 0;  // p; 0: d_model / heads (which must divide). "fixed" sets it freely
  int64_t keys = 2;      // M, for mgk/smgk/mlk
  bool hard_e = false;   // mgk/smgk: max over the M keys instead of the π-weighted sum
  bool soft_e = false;   // mgk/smgk: π re-estimated from posterior responsibilities (a buffer), not learned
  double sigma2 = 0;     // mgk/smgk: 0 means sqrt(p), the papers' choice
  // mgk/smgk: σ² per key component (M values > 0), e.g. the official language
  // model's {√p, √p/3}; empty: every component uses sigma2.
  std::vector<double> sigma2_keys{};
  // mgk/smgk: false fixes π at 1/M, which drops it from the logits (the
  // official hard-E has no π); needs learned π, so not with soft_e.
  bool learn_pi = true;
  // soft_e: the step of π towards each training batch's mean responsibilities
  // (1: replace π by that estimate, the official MGK code's rule)
  double pi_momentum = 0.1;
  // smgk: how the shifts μ_r start. "small": every μ_r ~ N(0, 0.02²);
  // "official": μ_1 = 0 and μ_r ~ N(0, 0.5²) for r >= 2 (the MGK code's), so
  // the components differ from the first step.
  std::string shift_init = "small";
  double dropout = 0;    // on attention weights (softmax/fixed/mgk)
  bool bias = true;      // biases of the projections

  int64_t resolved_head_dim() const { return head_dim > 0 ? head_dim : d_model / heads; }
  int64_t resolved_kv_dim() const { return kv_dim > 0 ? kv_dim : d_model; }
  // Throws ks::Error naming the offending field and value.
  void validate() const;
};

struct AttentionMask {
  // Query i (at absolute position offset + i) sees key j only if j <= offset + i,
  // where offset is the number of keys already in the cache.
  bool causal = false;
  // (B, S) bool, true where the key is padding (never attended to). Undefined: none.
  Tensor key_padding;
};

// Per-layer decoding state. Self-attention: each forward appends the new
// positions' keys/values (or adds them into the running sums). Cross-attention
// (is_static): the first forward projects the encoder memory, later ones reuse it.
struct AttentionCache {
  Tensor k, v;           // softmax family (B, h, S, p); mgk keys (B, h, M, S, p)
  Tensor state, norm;    // linear family: Σ φ(k) vᵀ (B, h, p, p) and Σ φ(k) (B, h, p)
  Tensor key_padding;    // (B, S) accumulated, when masks are given
  int64_t length = 0;    // keys seen so far
  bool is_static = false;
};

class Attention : public Module {
 public:
  explicit Attention(AttentionConfig cfg, const std::string& type_name) : Module(type_name), config(std::move(cfg)) {}
  virtual Tensor forward(const Tensor& query, const Tensor& key, const Tensor& value,
                         const AttentionMask& mask = {}, AttentionCache* cache = nullptr) = 0;
  // Self-attention shorthand.
  Tensor forward(const Tensor& x, const AttentionMask& mask = {}, AttentionCache* cache = nullptr) {
    return forward(x, x, x, mask, cache);
  }
  // When true, forward also stores, detached, what an analysis reads
  // (tools/analyze.h), computing the weights explicitly (op by op) instead of
  // through the fused kernels:
  //   last_weights (B, h, T, S)  the attention probabilities; for linear/mlk
  //                              the matrix their sums stand for, built explicitly
  //   last_scores  (B, h, T, S)  what the weights normalise: softmax/fixed the
  //                              scaled q·k (before masks), linear/mlk φ(q)·φ(k)
  //                              (0 where masked); mgk/smgk (B, h, M, T, S), each
  //                              component's logit without the per-query −‖q‖²/2σ²
  //   last_heads   (B, h, T, e)  each head's output before the output
  //                              projection, the head gate applied
  bool return_weights = false;
  Tensor last_weights, last_scores, last_heads;
  // Head gates ξ (h,): head i's output is multiplied by ξ_i before the output
  // projection (Michel et al., 2019). Undefined: every gate 1, at no cost.
  // 0 masks a head; with requires_grad, backward gives ∂L/∂ξ, the importance.
  Tensor head_gate;
  const AttentionConfig config;
};

// Every attention module under `root`, with its path of child names
// ("layers.0.self_attn"), in registration order (depth first): the "sites"
// that analyses and head masks name.
std::vector<std::pair<std::string, Attention*>> named_attention(Module& root);

// Parameters and forward FLOPs per query token (2 per multiply-add) for
// self-attention over `seq_len` keys, so families can be compared as the
// papers compare them. Causal attention counts the average of seq_len/2 keys.
struct AttentionCost {
  int64_t params = 0;
  double flops_per_token = 0;
  // What decoding keeps per sequence (AttentionCache), in floats: for each
  // cached position its keys and value (softmax, fixed: 2·h·p; mgk, smgk:
  // (M + 1)·h·p), and whatever the length (linear, mlk: the running sums
  // Σ φ(k) vᵀ and Σ φ(k), h·(p·p + p)).
  double cache_floats_per_position = 0;
  double cache_floats_fixed = 0;
};

// Builds the family named by cfg.type (after cfg.validate()).
std::shared_ptr<Attention> make_attention(const AttentionConfig& cfg);
AttentionCost attention_cost(const AttentionConfig& cfg, int64_t seq_len, bool causal);

// The registry behind make_attention: each family registers itself from its
// own source file (KS_REGISTER_ATTENTION), so adding a family edits no list.
struct AttentionFamily {
  std::shared_ptr<Attention> (*make)(const AttentionConfig&);
  AttentionCost (*cost)(const AttentionConfig&, int64_t seq_len, bool causal);
};
bool register_attention_family(const std::string& type, AttentionFamily family);
std::vector<std::string> attention_families();

}  // namespace ks::nn

#define KS_REGISTER_ATTENTION(type, make_fn, cost_fn)                                        \
  static const bool KS_CONCAT(ks_attention_registered_, __LINE__) =                          \
      ::ks::nn::register_attention_family(type, ::ks::nn::AttentionFamily{make_fn, cost_fn})
