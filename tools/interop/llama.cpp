// tools/interop/llama.cpp — LlamaForCausalLM as a Keystone decoder_lm, and
// the Llama-shaped variants of tools/interop/llama_like.h (Mistral, Qwen2,
// Phi-3), which share its names and mapping: RMSNorm (rms_norm_eps), rotary positions
// (rope_theta; rope_scaling linear, dynamic or llama3, as Llama 3.1/3.2 ship:
// nn/positions/rope.cpp), a SwiGLU feed-forward (hidden_act silu),
// grouped-query softmax attention (num_key_value_heads), pre-norm, a head of
// its own (or tied); biases only on the attention projections (Llama's
// attention_bias: q, k, v and o; Qwen2's q, k and v), none in the norms and
// the feed-forward. A head_dim other than hidden_size / num_attention_heads is
// imported as the "fixed" attention family (the same attention with an
// explicit head size), and such a model exports with head_dim in config.json.
//
//   HF (LlamaForCausalLM)                                    Keystone decoder_lm
//   model.embed_tokens.weight (V, d)                         tok.weight
//   model.layers.i.input_layernorm.weight (d)                layers.i.ln1.weight
//   model.layers.i.self_attn.q_proj.weight (h·p, d)          layers.i.self_attn.q.weight
//   model.layers.i.self_attn.{k,v}_proj.weight (g·p, d)      layers.i.self_attn.{k,v}.weight
//   model.layers.i.self_attn.o_proj.weight (d, h·p)          layers.i.self_attn.o.weight
//   model.layers.i.self_attn.{q,k,v,o}_proj.bias             layers.i.self_attn.{q,k,v,o}.bias (where biased)
//   model.layers.i.post_attention_layernorm.weight (d)       layers.i.ln3.weight
//   model.layers.i.mlp.{gate,up}_proj.weight (f, d)          layers.i.ff.{gate,up}.weight
//   model.layers.i.mlp.down_proj.weight (d, f)               layers.i.ff.down.weight
//   model.norm.weight (d)                                    ln_f.weight
//   lm_head.weight (V, d), unless tie_word_embeddings       head.weight (tied: tok.weight)
// Both keep Linear weights as (out, in), and both rotate by HF's rotate_half
// pairing (dimension i of a head with i + p/2; ops/rope.h), so q_proj and
// k_proj rows are taken as they are, no permutation. Query head n reads
// key/value head n / (h/g) in both (HF's repeat_kv; ops/attention.h).
// A tied checkpoint (tie_word_embeddings true, no lm_head.weight) makes a tied
// model with unscaled lookups (hf_architecture.h set_head).
// Phi-3 (fused) keeps q, k and v in one self_attn.qkv_proj.weight (h·p + 2·g·p,
// d) and gate and up in one mlp.gate_up_proj.weight (2f, d): import cuts them
// into Keystone's separate weights, export joins them again.
// Export writes the architecture a run was imported from where it can express
// the model, else the first in name order that can: a Llama-shaped one
// without a window and with no or all four attention biases is
// LlamaForCausalLM.
// Not here: GPT-2 (tools/interop/gpt2.cpp).
#include <algorithm>
#include <map>
#include <set>

#include "core/copy.h"
#include "core/error.h"
#include "nn/user_input.h"
#include "ops/shape.h"
#include "tools/interop/llama_like.h"

namespace ks::interop {
namespace {

constexpr double kRmsNormEps = 1e-6;  // LlamaConfig's defaults where a config.json leaves the key out
constexpr double kRopeTheta = 10000;

// config.json's rope_scaling as the rope positions' key (nn/positions/rope.cpp):
// HF's older "type" is "rope_type"; "dynamic" scales from max_position_embeddings
// (HF's _compute_dynamic_ntk_parameters), which Keystone's key names explicitly.
json rope_scaling(const HfConfig& c, int64_t max_position_embeddings) {
  json r = c.raw().at("rope_scaling");
  if (!r.is_object()) c.fail("rope_scaling", str("expected an object or null, got ", json_kind(r)));
  if (r.contains("type") && !r.contains("rope_type")) {
    r["rope_type"] = r["type"];
    r.erase("type");
  } else if (r.contains("type") && r["type"] == r["rope_type"]) {
    r.erase("type");
  }
  if (r.value("rope_type", json()) == "dynamic") r["original_max_position_embeddings"] = max_position_embeddings;
  return r;
}

// The attention window config.json gives (0: none), per the variant's keys.
int64_t sliding_window(const HfConfig& c, const LlamaVariant& v, int64_t layers) {
  if (v.window == LlamaVariant::Window::SlidingWindow || v.window == LlamaVariant::Window::Optional)
    return c.has("sliding_window") ? c.integer("sliding_window") : 0;
  if (v.window != LlamaVariant::Window::Qwen2Keys || !c.boolean_or("use_sliding_window", false)) return 0;
  // HF's Qwen2 windows the layers from max_window_layers on.
  const int64_t from = c.integer_or("max_window_layers", layers);
  if (from >= layers) return 0;
  if (from != 0)
    c.fail("max_window_layers", str(from, " windows layers ", from, " to ", layers - 1, " only; Keystone's ",
                                    "sliding window is the whole model's (0 or >= num_hidden_layers ", layers, ")"));
  return c.integer("sliding_window");
}

models::ModelConfig llama_model_config(const HfConfig& c, const LlamaVariant& v) {
  models::ModelConfig m;
  m.model = "decoder_lm";
  m.vocab_size = c.integer("vocab_size");
  m.d_model = c.integer("hidden_size");
  m.d_ff = c.integer("intermediate_size");
  m.layers = c.integer("num_hidden_layers");
  m.max_len = c.integer("max_position_embeddings");
  const int64_t heads = c.integer("num_attention_heads");
  const int64_t kv_heads = c.positive_or("num_key_value_heads", heads);
  if (kv_heads <= 0 || heads % kv_heads != 0)
    c.fail("num_key_value_heads", str(kv_heads, " does not divide num_attention_heads ", heads));
  if (!c.has("head_dim") && m.d_model % heads != 0)
    c.fail("num_attention_heads", str(heads, " does not divide hidden_size ", m.d_model));
  const int64_t head_dim = c.has("head_dim") ? c.integer("head_dim") : m.d_model / heads;
  if (head_dim % 2 != 0) c.fail(c.has("head_dim") ? "head_dim" : "num_attention_heads", "rope needs an even head size");
  const std::string act = c.string_or("hidden_act", "silu");
  if (act != "silu") c.fail("hidden_act", str("\"", act, "\" is not supported (silu: Keystone's swiglu)"));
  const double theta = c.number_or("rope_theta", kRopeTheta);
  if (!(theta > 0)) c.fail("rope_theta", str("must be > 0, got ", theta));
  json rope = {{"rope_theta", theta}};
  if (c.has("rope_scaling")) {
    rope["rope_scaling"] = rope_scaling(c, m.max_len);
    // Dynamic NTK exists to run past max_position_embeddings: the imported
    // model takes factor times as many positions (export writes the original back).
    const json& r = rope["rope_scaling"];
    if (r.value("rope_type", json()) == "dynamic" && r.contains("factor") && r["factor"].is_number() &&
        r["factor"].get<double>() > 1)
      m.max_len = std::min<int64_t>(models::kMaxLength, int64_t(r["factor"].get<double>() * double(m.max_len)));
  }
  if (c.boolean_or("mlp_bias", false))
    c.fail("mlp_bias", "true is not supported (Keystone's Llama-shaped models have no feed-forward biases)");
  // Phi-4-mini turns part of each head (0.75); Phi-3 all of it.
  if (c.has("partial_rotary_factor") && c.number_or("partial_rotary_factor", 1.0) != 1.0)
    c.fail("partial_rotary_factor",
           str(c.number_or("partial_rotary_factor", 1.0), " is not supported (Keystone's rope turns the whole head)"));
  m.norm = "rmsnorm";
  m.norm_eps = c.number_or("rms_norm_eps", kRmsNormEps);
  if (!(m.norm_eps > 0)) c.fail("rms_norm_eps", str("must be > 0, got ", m.norm_eps));
  m.ff = "swiglu";
  m.bias = false;  // no biases in the norms and the feed-forward
  m.dropout = 0;   // Llama has no residual dropout
  m.pre_norm = true;
  m.positions = "rope";
  try {
    m.position_options = nn::parse_positions("rope", rope, "");
  } catch (const Error& e) {  // "config: rope_scaling.factor: ..." -> the folder's config.json and key
    const std::string what = e.what();
    c.fail("rope_scaling", what.rfind("config: ", 0) == 0 ? what.substr(8) : what);
  }
  set_head(m, c, /*tied_default=*/false);
  m.pad_id = -1;
  // A head_dim other than hidden_size / heads (Gemma-style, Mistral-Nemo) is
  // the "fixed" family's explicit head size, the same attention otherwise.
  m.attention.type = head_dim * heads == m.d_model ? "softmax" : "fixed";
  m.attention.heads = heads;
  m.attention.head_dim = head_dim;
  m.attention.kv_heads = kv_heads;
  m.attention.dropout = c.probability_or("attention_dropout", 0.0);
  const bool qkv_only = v.bias == LlamaVariant::Bias::QkvOnly;
  m.attention.bias =
      qkv_only || (v.bias == LlamaVariant::Bias::AttentionBiasKey && c.boolean_or("attention_bias", false));
  m.attention.out_bias = !qkv_only;
  m.attention.window = sliding_window(c, v, m.layers);
  return m;
}

// One layer's parameters: the HF module after "model.layers.i.", Keystone's
// after "layers.i.", the parameter ("weight" or "bias"), its shape, and the
// config keys that fix it.
struct LayerWeight {
  std::string hf, keystone, param;
  Shape shape;
  std::string why;
};

std::vector<LayerWeight> layer_weights(const models::ModelConfig& m) {
  const int64_t d = m.d_model, f = m.resolved_d_ff();
  const int64_t h = m.attention.heads, g = m.attention.resolved_kv_heads(), p = m.attention.resolved_head_dim();
  const std::string dims = str("hidden_size ", d), ffs = str("hidden_size ", d, ", intermediate_size ", f);
  const std::string qs = str("hidden_size ", d, ", num_attention_heads ", h, ", head size ", p);
  const std::string kvs = str("hidden_size ", d, ", num_key_value_heads ", g, ", head size ", p);
  std::vector<LayerWeight> w = {{"input_layernorm", "ln1", "weight", {d}, dims},
                                {"self_attn.q_proj", "self_attn.q", "weight", {h * p, d}, qs},
                                {"self_attn.k_proj", "self_attn.k", "weight", {g * p, d}, kvs},
                                {"self_attn.v_proj", "self_attn.v", "weight", {g * p, d}, kvs},
                                {"self_attn.o_proj", "self_attn.o", "weight", {d, h * p}, qs},
                                {"post_attention_layernorm", "ln3", "weight", {d}, dims},
                                {"mlp.gate_proj", "ff.gate", "weight", {f, d}, ffs},
                                {"mlp.up_proj", "ff.up", "weight", {f, d}, ffs},
                                {"mlp.down_proj", "ff.down", "weight", {d, f}, ffs}};
  if (m.attention.bias) {
    w.push_back({"self_attn.q_proj", "self_attn.q", "bias", {h * p}, qs});
    w.push_back({"self_attn.k_proj", "self_attn.k", "bias", {g * p}, kvs});
    w.push_back({"self_attn.v_proj", "self_attn.v", "bias", {g * p}, kvs});
    if (m.attention.resolved_out_bias()) w.push_back({"self_attn.o_proj", "self_attn.o", "bias", {d}, dims});
  }
  return w;
}

// Phi-3's fused weights: each one's parts, in the order its rows hold them.
struct FusedWeight {
  std::string hf;                  // after "model.layers.i.", before ".weight"
  std::vector<std::string> parts;  // the parts' HF modules (layer_weights' names)
};
const std::vector<FusedWeight> kPhi3Fused = {
    {"self_attn.qkv_proj", {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"}},
    {"mlp.gate_up_proj", {"mlp.gate_proj", "mlp.up_proj"}}};

// The weight of layer_weights' entry for HF module `hf` (a fused weight's part).
const LayerWeight& weight_of(const std::vector<LayerWeight>& weights, const std::string& hf) {
  for (const LayerWeight& w : weights)
    if (w.hf == hf && w.param == "weight") return w;
  throw Error(str("llama: no layer weight for ", hf));  // kPhi3Fused names a module layer_weights lacks
}

nn::NamedTensors llama_import(HfTensors& t, const models::ModelConfig& m, const LlamaVariant& v) {
  const int64_t d = m.d_model, V = m.vocab_size;
  const std::string dims = str("hidden_size ", d), vocab = str("vocab_size ", V, ", ", dims);
  nn::NamedTensors out;
  Tensor embed = t.take("model.embed_tokens.weight", {V, d}, vocab);
  out.emplace_back("tok.weight", embed);
  const std::vector<LayerWeight> weights = layer_weights(m);
  for (int64_t i = 0; i < m.layers; ++i) {
    const std::string l = str("model.layers.", i, "."), k = str("layers.", i, ".");
    std::map<std::string, Tensor> cut;  // the parts of this layer's fused weights, by HF module
    if (v.fused)
      for (const FusedWeight& f : kPhi3Fused) {
        int64_t rows = 0;
        std::string why;
        for (const std::string& part : f.parts) {
          const LayerWeight& w = weight_of(weights, part);
          rows += w.shape[0];
          why += str(why.empty() ? "" : "; ", part, ": ", w.why);
        }
        const Tensor whole = t.take(str(l, f.hf, ".weight"), {rows, d}, why);
        int64_t at = 0;
        for (const std::string& part : f.parts) {
          const int64_t n = weight_of(weights, part).shape[0];
          cut[part] = slice(whole, 0, at, n);
          at += n;
        }
      }
    for (const LayerWeight& w : weights) {
      auto fused = cut.find(w.hf);
      out.emplace_back(str(k, w.keystone, ".", w.param), fused != cut.end() && w.param == "weight"
                                                             ? fused->second
                                                             : t.take(str(l, w.hf, ".", w.param), w.shape, w.why));
    }
    if (t.has(l + "self_attn.rotary_emb.inv_freq")) t.ignore(l + "self_attn.rotary_emb.inv_freq");  // older files
  }
  out.emplace_back("ln_f.weight", t.take("model.norm.weight", {d}, dims));
  import_head(out, t, m, embed, vocab);
  return out;
}

std::string llama_cannot_export(const models::ModelConfig& m, const LlamaVariant& v) {
  std::vector<std::string> why = causal_lm_mismatches(m, v.words);
  if (m.positions != "rope") why.push_back(str("positions \"", m.positions, "\" (", v.words, "'s: rope)"));
  if (m.norm != "rmsnorm") why.push_back(str("norm \"", m.norm, "\" (", v.words, ": rmsnorm)"));
  if (m.ff != "swiglu") why.push_back(str("ff \"", m.ff, "\" (", v.words, ": swiglu)"));
  if (m.bias) why.push_back(str("bias true (", v.words, " has no biases in its norms and feed-forward)"));
  const bool qkv_only = m.attention.bias && !m.attention.out_bias;
  if (v.bias == LlamaVariant::Bias::QkvOnly && !qkv_only)
    why.push_back(str("attention.bias ", m.attention.bias ? "true with out_bias true" : "false", " (", v.words,
                      ": q, k and v biases, none on the output)"));
  if (v.bias == LlamaVariant::Bias::AttentionBiasKey && qkv_only)
    why.push_back(str("attention.out_bias false with bias true (", v.words, "'s attention_bias biases all four)"));
  if (v.window == LlamaVariant::Window::None && m.attention.window > 0)
    why.push_back(str("attention.window ", m.attention.window, " (", v.words, " has no sliding window)"));
  if (v.window == LlamaVariant::Window::SlidingWindow && m.attention.window == 0)
    why.push_back(str("attention.window 0 (", v.words, " without a sliding window is Llama's form)"));
  if (v.bias == LlamaVariant::Bias::None && m.attention.bias)
    why.push_back(str("attention.bias true (", v.words, " has no attention biases)"));
  return joined(why);
}

json llama_hf_config(const models::ModelConfig& m, const LlamaVariant& v) {
  const int64_t heads = m.attention.heads, head_dim = m.attention.resolved_head_dim();
  const json rope = m.position_kind()->to_json();
  const json scaling = rope.value("rope_scaling", json());
  // HF's dynamic scaling grows from max_position_embeddings: the original context.
  const bool dynamic = scaling.is_object() && scaling.value("rope_type", "") == "dynamic";
  const int64_t max_positions = dynamic ? scaling.at("original_max_position_embeddings").get<int64_t>() : m.max_len;
  json c = {{"architectures", {v.name}},
            {"model_type", v.model_type},
            {"vocab_size", m.vocab_size},
            {"hidden_size", m.d_model},
            {"intermediate_size", m.resolved_d_ff()},
            {"num_hidden_layers", m.layers},
            {"num_attention_heads", heads},
            {"num_key_value_heads", m.attention.resolved_kv_heads()},
            {"hidden_act", "silu"},
            {"max_position_embeddings", max_positions},
            {"rms_norm_eps", m.norm_eps},
            {"rope_theta", rope.at("rope_theta")},
            {"rope_scaling", scaling},
            {"attention_dropout", m.attention.dropout},
            {"torch_dtype", "float32"}};
  c["head_dim"] = head_dim;  // explicit even where it is HF's default, hidden_size / heads
  if (v.bias == LlamaVariant::Bias::AttentionBiasKey) {
    c["attention_bias"] = m.attention.bias;
    c["mlp_bias"] = false;
  }
  if (v.window == LlamaVariant::Window::SlidingWindow) c["sliding_window"] = m.attention.window;
  if (v.window == LlamaVariant::Window::Optional)
    c["sliding_window"] = m.attention.window > 0 ? json(m.attention.window) : json();
  if (v.fused) {  // Phi-3's dropout keys; an imported model has none
    c["resid_pdrop"] = 0.0;
    c["embd_pdrop"] = 0.0;
  }
  if (v.window == LlamaVariant::Window::Qwen2Keys) {
    c["use_sliding_window"] = m.attention.window > 0;
    c["sliding_window"] = m.attention.window > 0 ? json(m.attention.window) : json();
    c["max_window_layers"] = m.attention.window > 0 ? 0 : m.layers;
  }
  return c;
}

nn::NamedTensors llama_export(const nn::NamedTensors& state, const models::ModelConfig& m, const LlamaVariant& v) {
  const ModelState s(state);
  nn::NamedTensors out;
  out.emplace_back("model.embed_tokens.weight", s.at("tok.weight"));
  const std::vector<LayerWeight> weights = layer_weights(m);
  for (int64_t i = 0; i < m.layers; ++i) {
    const std::string l = str("model.layers.", i, "."), k = str("layers.", i, ".");
    std::set<std::string> joined_parts;
    if (v.fused)
      for (const FusedWeight& f : kPhi3Fused) {
        std::vector<Tensor> parts;
        for (const std::string& part : f.parts) {
          parts.push_back(s.at(str(k, weight_of(weights, part).keystone, ".weight")));
          joined_parts.insert(part);
        }
        out.emplace_back(str(l, f.hf, ".weight"), contiguous_raw(cat(parts, 0)));
      }
    for (const LayerWeight& w : weights)
      if (!(w.param == "weight" && joined_parts.count(w.hf)))
        out.emplace_back(str(l, w.hf, ".", w.param), s.at(str(k, w.keystone, ".", w.param)));
  }
  out.emplace_back("model.norm.weight", s.at("ln_f.weight"));
  export_head(out, s, m);
  return out;
}

// LoRA adapters: each of the model's Linears is one of Llama's (q_proj, ..., down_proj, lm_head).
// Phi-3: the adapters of q, k, v, gate and up would have to be joined as
// GPT-2's c_attn's are; not yet, so they have no module to go on (an error).
std::vector<HfLora> llama_export_lora(const LoraAdapters& adapters, const models::ModelConfig& m, int64_t r,
                                      double alpha, const LlamaVariant& v) {
  const std::vector<LayerWeight> weights = layer_weights(m);
  return one_to_one_lora(
      adapters, r, alpha,
      [&](const std::string& path) -> std::string {
        if (path == "head") return "lm_head";
        for (int64_t i = 0; i < m.layers; ++i)
          for (const LayerWeight& w : weights)
            if (path == str("layers.", i, ".", w.keystone)) {
              if (v.fused)
                for (const FusedWeight& f : kPhi3Fused)
                  if (std::find(f.parts.begin(), f.parts.end(), w.hf) != f.parts.end()) return "";
              return str("model.layers.", i, ".", w.hf);
            }
        return "";
      },
      v.words);
}

}  // namespace

HfArchitecture llama_like(const LlamaVariant& v) {
  return {.name = v.name,
          .model_type = v.model_type,
          .model_config = [v](const HfConfig& c) { return llama_model_config(c, v); },
          .import_tensors = [v](HfTensors& t, const HfConfig&,
                                const models::ModelConfig& m) { return llama_import(t, m, v); },
          .cannot_export = [v](const models::ModelConfig& m) { return llama_cannot_export(m, v); },
          .hf_config = [v](const models::ModelConfig& m) { return llama_hf_config(m, v); },
          .export_tensors = [v](const nn::NamedTensors& state,
                                const models::ModelConfig& m) { return llama_export(state, m, v); },
          .export_lora = [v](const LoraAdapters& a, const models::ModelConfig& m, int64_t r,
                             double alpha) { return llama_export_lora(a, m, r, alpha, v); }};
}

KS_HF_ARCHITECTURE(llama_like({.name = "LlamaForCausalLM", .model_type = "llama", .words = "Llama"}));

}  // namespace ks::interop
