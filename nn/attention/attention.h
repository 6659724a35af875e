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
// Each family lives in its own source file with its options (MGK's keys and
// σ², …: an AttentionOptions subclass that parses its JSON keys, writes them
// and checks them) and registers both (KS_REGISTER_ATTENTION); this header
// and the config parser name no family and no family's option.
// Masks: causal and/or key padding (AttentionMask). Incremental decoding goes
// through an AttentionCache: projected keys/values (softmax family, MGK) or
// the running sums (linear family) grow one step at a time, and the output
// equals full recomputation.
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <optional>
#include <string>
#include <typeinfo>
#include <vector>

#include "core/dispatch.h"
#include "core/registry.h"
#include "nn/module.h"
#include "nn/typed_options.h"
#include "ops/rope.h"  // RopeScaling

namespace ks::nn {

struct AttentionConfig;

// A family's own options, defined beside its math (MgkOptions in
// mgk_attention.h, …). The shared AttentionConfig holds them opaquely; the
// family reads them typed (AttentionConfig::options_as).
class AttentionOptions {
 public:
  virtual ~AttentionOptions() = default;
  // Every key of the family, explicit, as the config's attention section holds it.
  virtual nlohmann::json to_json() const = 0;
  // Throws ks::Error naming "attention.<key>" and the value; `cfg` gives the
  // shared fields (heads, head_dim, …) the family's rules may involve.
  virtual void validate(const AttentionConfig& cfg) const = 0;
  // Whether the family takes fewer key/value heads than query heads
  // (AttentionConfig::kv_heads) and ALiBi (AttentionConfig::alibi); the
  // shared validate refuses them, naming the families that do, otherwise.
  virtual bool takes_kv_groups() const { return false; }
  virtual bool takes_alibi() const { return false; }
  // Whether the family takes a sliding window (AttentionConfig::window).
  virtual bool takes_window() const { return false; }
};

// What every family has, plus the family's own options.
struct AttentionConfig {
  std::string type = "softmax";
  int64_t d_model = 0;  // query width, and the output width
  int64_t kv_dim = 0;   // key/value input width (cross-attention); 0: d_model
  int64_t heads = 8;
  int64_t head_dim = 0;  // p; 0: d_model / heads (which must divide). "fixed" sets it freely
  int64_t kv_heads = 0;  // key/value heads g, dividing heads (grouped-query attention; 1: multi-query); 0: heads
  bool alibi = false;    // ALiBi's linear biases on the scores (Press et al. 2022), families that take it
  double dropout = 0;    // on attention weights (families that form them)
  bool bias = true;      // biases of the projections
  bool out_bias = true;  // with bias: the output projection's too (false: q, k, v only, as Qwen2)
  // > 0: a sliding window on causal self-attention (Mistral's): the query at
  // position i sees the keys at i − window + 1 .. i only (ops/attention.h).
  int64_t window = 0;
  // > 0: rotary position embeddings with this base θ (ops/rope.h): queries and
  // keys turn by their absolute positions (cache offset + t) after projection,
  // before the cache keeps the keys (nn/attention/rope.h). Set by the
  // positions kind "rope" (nn/positions/) on self-attention only; 0: none.
  double rope_theta = 0;
  // How rope_theta's frequencies are stretched for a longer context (HF's
  // rope_scaling: linear, dynamic, llama3; ops/rope.h). Set with rope_theta.
  RopeScaling rope_scaling{};
  // The family's options, shared read-only between copies of the config;
  // null: the family's defaults. Set with with_options, read with options_as.
  std::shared_ptr<const AttentionOptions> options{};

  int64_t resolved_head_dim() const { return head_dim > 0 ? head_dim : d_model / heads; }
  int64_t resolved_kv_dim() const { return kv_dim > 0 ? kv_dim : d_model; }
  int64_t resolved_kv_heads() const { return kv_heads > 0 ? kv_heads : heads; }
  bool resolved_out_bias() const { return bias && out_bias; }
  // The attention of a layer of width d (self- and cross-attention over a
  // memory of the same width): this config with d_model = d and kv_dim 0.
  // The one place a model sets an attention's width.
  AttentionConfig at_width(int64_t d) const;
  // This config for a cross-attention: without position terms (rope_theta
  // 0), as a decoder's queries and the encoder's keys share no positions.
  AttentionConfig cross() const;
  // Throws ks::Error naming the offending field and value.
  void validate() const;

  // The options as the family's type T (a family reads only its own; a
  // variant's options may derive from its base family's); T's defaults when
  // none are set. Options of another type are a programming error.
  template <class T> const T& options_as() const {
    return typed_options<T>(options, "attention '", type, "': its options are another family's");
  }
  template <class T> AttentionConfig& with_options(T value) {
    options = std::make_shared<const T>(std::move(value));
    return *this;
  }
};

struct AttentionMask {
  // Query i (at absolute position offset + i) sees key j only if j <= offset + i,
  // where offset is the number of keys already in the cache.
  bool causal = false;
  // (B, S) bool, true where the key is padding (never attended to). Undefined: none.
  Tensor key_padding{};
};

// Per-layer decoding state. Self-attention: each forward appends the new
// positions' keys/values (or adds them into the running sums). Cross-attention
// (is_static): the first forward projects the encoder memory, later ones reuse it.
struct AttentionCache {
  Tensor k, v;  // softmax family (B, g, S, p), g = kv_heads; mgk keys (B, h, M, S, p)
  // While decoding without autograd, k and v are views of the first `length`
  // positions of these, which have room for more (nn/attention/heads.h,
  // keys_through_cache); undefined otherwise.
  Tensor k_room, v_room;
  Tensor state, norm;  // linear family: Σ φ(k) vᵀ (B, h, p, p) and Σ φ(k) (B, h, p)
  Tensor key_padding;  // (B, S) accumulated, when masks are given
  int64_t length = 0;  // keys seen so far
  bool is_static = false;
};

// What a forward with Attention::return_weights recorded, detached.
struct AttentionRecord {
  // (B, h, T, S) the attention probabilities; for linear/mlk the matrix their
  // sums stand for, built explicitly.
  Tensor weights;
  // What the weights normalise: softmax/fixed the scaled q·k (plus ALiBi's
  // biases; before masks), linear/mlk φ(q)·φ(k) (0 where masked), (B, h, T,
  // S); a family whose KeyMixture has component_scores (mgk/smgk) one logit
  // per key component, (B, h, M, T, S), without the per-query −‖q‖²/2σ².
  Tensor scores;
  // (B, h, T, e) each head's output before the output projection, the head
  // gate applied.
  Tensor heads;
  // (B, h, M, S, p) the component keys k_jr attended to (component_scores
  // families; undefined otherwise): the distances between a position's keys.
  Tensor keys;
};

// A family that mixes M keys per position (Attention::key_mixture).
struct KeyMixture {
  int64_t keys = 1;  // M
  // π (h, M), the mixing weights as they are now.
  Tensor pi;
  // Whether record().scores holds one logit per key component (B, h, M, T,
  // S) and record().keys the keys (mgk, smgk), rather than the mixture's
  // (B, h, T, S) (mlk, whose keys mix inside its sums).
  bool component_scores = false;
  // Whether the components' logits combine by their max (MGK's hard E)
  // rather than log Σ_r exp.
  bool hard_max = false;
};

class Attention : public Module {
 public:
  explicit Attention(AttentionConfig cfg, const std::string& type_name) : Module(type_name), config(std::move(cfg)) {}
  virtual Tensor forward(const Tensor& query, const Tensor& key, const Tensor& value, const AttentionMask& mask = {},
                         AttentionCache* cache = nullptr) = 0;
  // Self-attention shorthand.
  Tensor forward(const Tensor& x, const AttentionMask& mask = {}, AttentionCache* cache = nullptr) {
    return forward(x, x, x, mask, cache);
  }
  // When true, forward also fills record() with what an analysis reads
  // (tools/analyze/analyze.h), computing the weights explicitly (op by op)
  // instead of through the fused kernels.
  bool return_weights = false;
  AttentionRecord& record() { return record_; }
  const AttentionRecord& record() const { return record_; }
  // Drops what the last forward recorded (the tensors it held).
  void clear_record() { record_ = {}; }
  // Head gates ξ (h,): head i's output is multiplied by ξ_i before the output
  // projection (Michel et al., 2019). Undefined: every gate 1, at no cost.
  // 0 masks a head; with requires_grad, backward gives ∂L/∂ξ, the importance.
  Tensor head_gate;
  // The family's mixture of keys per position (mgk, smgk, mlk), what an
  // analysis asks instead of the family's name; nullopt for a family that
  // has one key per position.
  virtual std::optional<KeyMixture> key_mixture() const { return std::nullopt; }
  const AttentionConfig config;

 private:
  AttentionRecord record_;
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
  // cached position its keys and value (softmax, fixed: 2·g·p, g = kv_heads; mgk, smgk:
  // (M + 1)·h·p), and whatever the length (linear, mlk: the running sums
  // Σ φ(k) vᵀ and Σ φ(k), h·(p·p + p)).
  double cache_floats_per_position = 0;
  double cache_floats_fixed = 0;
};

// Builds the family named by cfg.type (after cfg.validate()).
std::shared_ptr<Attention> make_attention(const AttentionConfig& cfg);
AttentionCost attention_cost(const AttentionConfig& cfg, int64_t seq_len, bool causal);

// The registry behind make_attention: each family registers itself from its
// own source file (KS_REGISTER_ATTENTION), so adding a family edits no list;
// a plugin's families arrive when it is loaded (core/plugin_loader.h).
struct AttentionFamily {
  std::shared_ptr<Attention> (*make)(const AttentionConfig&);
  AttentionCost (*cost)(const AttentionConfig&, int64_t seq_len, bool causal);
  // Reads the family's own keys from an attention section (absent ones keep
  // their defaults; the section's other keys are not its business). Type
  // errors name the key as "config: <where><key>: ...".
  std::shared_ptr<const AttentionOptions> (*parse)(const nlohmann::json& section, const std::string& where);
  std::vector<KeyDoc> (*keys)();  // the keys parse reads
  const std::type_info* options_type;
};
// `order` places a family in attention_families() (lower first, then by
// name): the built-in ones give theirs (the papers' families, then the linear
// ones); a family registered without one comes after them all.
bool register_attention_family(const std::string& type, AttentionFamily family);
bool register_attention_family(const std::string& type, AttentionFamily family, int order);
std::vector<std::string> attention_families();  // softmax, fixed, linear, mgk, smgk, mlk, then any other

// A family's registry entry from its options type: Options is default
// constructible (the defaults) and has static `Options parse(const json&,
// const std::string& where)` and `std::vector<KeyDoc> option_keys()`.
template <class Options>
AttentionFamily attention_family(std::shared_ptr<Attention> (*make)(const AttentionConfig&),
                                 AttentionCost (*cost)(const AttentionConfig&, int64_t, bool)) {
  return {make, cost,
          [](const nlohmann::json& section, const std::string& where) -> std::shared_ptr<const AttentionOptions> {
            return std::make_shared<const Options>(Options::parse(section, where));
          },
          &Options::option_keys, &typeid(Options)};
}

// The config file's view of the families' options, for models/config.cpp.
// Every family's option keys, each once, its doc prefixed with the families
// that take it ("mgk/smgk: ...").
std::vector<KeyDoc> attention_option_keys();
// The options of family `type` from an attention section whose keys are known
// (attention_option_keys or the shared ones). Another family's key is
// accepted at that family's default value (a resolved config lists every
// family's keys, see attention_options_json), else refused: "config:
// <where><key> applies to mgk and smgk only, not 'softmax'"; an unknown
// family "config: <where>type: unknown family ...".
std::shared_ptr<const AttentionOptions> parse_attention_options(const nlohmann::json& section, const std::string& type,
                                                                const std::string& where);
// cfg's options as JSON, with every other family's keys at their defaults:
// the keys a resolved config has always listed, whatever its family.
nlohmann::json attention_options_json(const AttentionConfig& cfg);

}  // namespace ks::nn

#define KS_REGISTER_ATTENTION(type, Options, make_fn, cost_fn, ...)                                      \
  static const bool KS_CONCAT(ks_attention_registered_, __LINE__) = ::ks::nn::register_attention_family( \
      type, ::ks::nn::attention_family<Options>(make_fn, cost_fn) __VA_OPT__(, ) __VA_ARGS__)
