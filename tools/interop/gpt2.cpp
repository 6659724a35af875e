// tools/interop/gpt2.cpp — GPT2LMHeadModel as a Keystone decoder_lm: learned
// positions, pre-LN LayerNorm (layer_norm_epsilon), GELU-tanh ("gelu_new"), softmax
// attention with biases, a fused c_attn split into q, k, v.
//
//   HF (GPT2LMHeadModel, "transformer." prefix optional)   Keystone decoder_lm
//   wte.weight (V, d)                                       tok.weight (tied: also the head)
//   lm_head.weight (V, d), tie_word_embeddings false        head.weight
//   wpe.weight (P, d)                                       pos.weight
//   h.i.ln_1.{weight,bias}                                  layers.i.ln1.*
//   h.i.attn.c_attn.weight (d, 3d), .bias (3d)              layers.i.self_attn.{q,k,v}.weight (d, d)ᵀ, .bias
//   h.i.attn.c_proj.weight (d, d)                           layers.i.self_attn.o.weight ᵀ
//   h.i.ln_2.*                                              layers.i.ln3.*
//   h.i.mlp.c_fc.weight (d, f), c_proj (f, d)               layers.i.ff.fc1 ᵀ, ff.fc2 ᵀ
//   ln_f.*                                                  ln_f.*
// GPT-2's Conv1D keeps a weight as (in, out); Keystone's Linear as (out, in).
// GPT-2 ties its head (tie_word_embeddings, default true): the model is tied,
// its lookups unscaled (hf_architecture.h set_head), and its export writes no
// lm_head.weight.
// Not here: Llama (tools/interop/llama.cpp).
#include <algorithm>
#include <cmath>
#include <map>

#include "core/copy.h"
#include "core/error.h"
#include "core/factory.h"
#include "ops/shape.h"
#include "tools/interop/hf_architecture.h"

namespace ks::interop {
namespace {

constexpr double kLayerNormEps = 1e-5;  // GPT2Config's default

models::ModelConfig gpt2_model_config(const HfConfig& c) {
  models::ModelConfig m;
  m.model = "decoder_lm";
  m.vocab_size = c.integer("vocab_size");
  m.d_model = c.integer("n_embd");
  m.layers = c.integer("n_layer");
  m.max_len = c.integer("n_positions");
  m.d_ff = c.positive_or("n_inner", 4 * m.d_model);
  const int64_t heads = c.integer("n_head");
  if (m.d_model % heads != 0) c.fail("n_head", str(heads, " does not divide n_embd ", m.d_model));
  const std::string act = c.string_or("activation_function", "gelu_new");
  if (act == "gelu_new" || act == "gelu_pytorch_tanh")
    m.activation = "gelu_tanh";
  else if (act == "gelu")
    m.activation = "gelu";
  else if (act == "relu")
    m.activation = "relu";
  else
    c.fail("activation_function", str("\"", act, "\" is not supported (gelu_new, gelu_pytorch_tanh, gelu or relu)"));
  m.norm_eps = c.number_or("layer_norm_epsilon", kLayerNormEps);
  if (!(m.norm_eps > 0)) c.fail("layer_norm_epsilon", str("must be > 0, got ", m.norm_eps));
  if (!c.boolean_or("scale_attn_weights", true)) c.fail("scale_attn_weights", "false is not supported");
  if (c.boolean_or("scale_attn_by_inverse_layer_idx", false))
    c.fail("scale_attn_by_inverse_layer_idx", "true is not supported");
  if (c.boolean_or("add_cross_attention", false)) c.fail("add_cross_attention", "true is not supported");
  m.dropout = c.probability_or("resid_pdrop", 0.1);
  m.pre_norm = true;
  m.positions = "learned";
  set_head(m, c, /*tied_default=*/true);
  m.pad_id = -1;
  m.attention.type = "softmax";
  m.attention.heads = heads;
  m.attention.head_dim = m.d_model / heads;
  m.attention.dropout = c.probability_or("attn_pdrop", 0.1);
  m.attention.bias = true;
  return m;
}

std::string prefix_of(const HfTensors& t) { return t.has("transformer.wte.weight") ? "transformer." : ""; }

nn::NamedTensors gpt2_import(HfTensors& t, const HfConfig&, const models::ModelConfig& m) {
  const std::string p = prefix_of(t);
  const int64_t d = m.d_model, f = m.resolved_d_ff(), V = m.vocab_size;
  const std::string dims = str("n_embd ", d), ffs = str("n_embd ", d, ", n_inner ", f);
  nn::NamedTensors out;
  Tensor wte = t.take(p + "wte.weight", {V, d}, str("vocab_size ", V, ", ", dims));
  out.emplace_back("tok.weight", wte);
  out.emplace_back("pos.weight", t.take(p + "wpe.weight", {m.max_len, d}, str("n_positions ", m.max_len, ", ", dims)));
  for (int64_t i = 0; i < m.layers; ++i) {
    const std::string h = str(p, "h.", i, "."), k = str("layers.", i, ".");
    auto norm = [&](const std::string& from, const std::string& to) {
      out.emplace_back(k + to + ".weight", t.take(h + from + ".weight", {d}, dims));
      out.emplace_back(k + to + ".bias", t.take(h + from + ".bias", {d}, dims));
    };
    norm("ln_1", "ln1");
    Tensor qkv_w = t.take(h + "attn.c_attn.weight", {d, 3 * d}, dims);
    Tensor qkv_b = t.take(h + "attn.c_attn.bias", {3 * d}, dims);
    const char* parts[] = {"q", "k", "v"};
    for (int64_t j = 0; j < 3; ++j) {
      out.emplace_back(str(k, "self_attn.", parts[j], ".weight"), transposed(slice(qkv_w, 1, j * d, d)));
      out.emplace_back(str(k, "self_attn.", parts[j], ".bias"), slice(qkv_b, 0, j * d, d));
    }
    out.emplace_back(k + "self_attn.o.weight", transposed(t.take(h + "attn.c_proj.weight", {d, d}, dims)));
    out.emplace_back(k + "self_attn.o.bias", t.take(h + "attn.c_proj.bias", {d}, dims));
    norm("ln_2", "ln3");
    out.emplace_back(k + "ff.fc1.weight", transposed(t.take(h + "mlp.c_fc.weight", {d, f}, ffs)));
    out.emplace_back(k + "ff.fc1.bias", t.take(h + "mlp.c_fc.bias", {f}, ffs));
    out.emplace_back(k + "ff.fc2.weight", transposed(t.take(h + "mlp.c_proj.weight", {f, d}, ffs)));
    out.emplace_back(k + "ff.fc2.bias", t.take(h + "mlp.c_proj.bias", {d}, ffs));
    for (const char* buffer : {"attn.bias", "attn.masked_bias"})  // causal masks older files keep
      if (t.has(h + buffer)) t.ignore(h + buffer);
  }
  out.emplace_back("ln_f.weight", t.take(p + "ln_f.weight", {d}, dims));
  out.emplace_back("ln_f.bias", t.take(p + "ln_f.bias", {d}, dims));
  import_head(out, t, m, wte, str("vocab_size ", V, ", ", dims));
  return out;
}

std::string gpt2_cannot_export(const models::ModelConfig& m) {
  std::vector<std::string> why = causal_lm_mismatches(m, "GPT-2");
  if (m.positions != "learned") why.push_back(str("positions \"", m.positions, "\" (GPT-2's are learned)"));
  if (m.norm != "layernorm") why.push_back(str("norm \"", m.norm, "\" (GPT-2: layernorm)"));
  if (m.ff != "mlp") why.push_back(str("ff \"", m.ff, "\" (GPT-2: mlp)"));
  if (m.activation != "gelu" && m.activation != "gelu_tanh" && m.activation != "relu")
    why.push_back(str("activation \"", m.activation, "\" (GPT-2's: gelu_new, gelu or relu)"));
  if (!m.bias || !m.attention.bias) why.push_back("bias false (GPT-2's projections and norms have biases)");
  if (!m.attention.out_bias) why.push_back("attention.out_bias false (GPT-2's c_proj has a bias)");
  if (m.attention.window > 0)
    why.push_back(str("attention.window ", m.attention.window, " (GPT-2 has no sliding window)"));
  if (m.attention.resolved_kv_heads() != m.attention.heads)
    why.push_back("attention.kv_heads (GPT-2 has as many key/value heads as query heads)");
  if (m.attention.resolved_head_dim() * m.attention.heads != m.d_model)
    why.push_back("attention.head_dim x heads != d_model (GPT-2 splits d_model over its heads)");
  return joined(why);
}

json gpt2_hf_config(const models::ModelConfig& m) {
  const std::string act = m.activation == "gelu_tanh" ? "gelu_new" : m.activation;
  return json{{"architectures", {"GPT2LMHeadModel"}},
              {"model_type", "gpt2"},
              {"vocab_size", m.vocab_size},
              {"n_positions", m.max_len},
              {"n_embd", m.d_model},
              {"n_layer", m.layers},
              {"n_head", m.attention.heads},
              {"n_inner", m.resolved_d_ff()},
              {"activation_function", act},
              {"layer_norm_epsilon", m.norm_eps},
              {"resid_pdrop", m.dropout},
              {"embd_pdrop", m.dropout},
              {"attn_pdrop", m.attention.dropout},
              {"scale_attn_weights", true},
              {"torch_dtype", "float32"}};
}

nn::NamedTensors gpt2_export(const nn::NamedTensors& state, const models::ModelConfig& m) {
  const ModelState s(state);
  nn::NamedTensors out;
  const std::string p = "transformer.";
  out.emplace_back(p + "wte.weight", s.at("tok.weight"));
  out.emplace_back(p + "wpe.weight", s.at("pos.weight"));
  for (int64_t i = 0; i < m.layers; ++i) {
    const std::string h = str(p, "h.", i, "."), k = str("layers.", i, ".");
    out.emplace_back(h + "ln_1.weight", s.at(k + "ln1.weight"));
    out.emplace_back(h + "ln_1.bias", s.at(k + "ln1.bias"));
    std::vector<Tensor> w, b;
    for (const char* part : {"q", "k", "v"}) {
      w.push_back(transposed(s.at(str(k, "self_attn.", part, ".weight"))));
      b.push_back(s.at(str(k, "self_attn.", part, ".bias")));
    }
    out.emplace_back(h + "attn.c_attn.weight", contiguous_raw(cat(w, 1)));
    out.emplace_back(h + "attn.c_attn.bias", contiguous_raw(cat(b, 0)));
    out.emplace_back(h + "attn.c_proj.weight", transposed(s.at(k + "self_attn.o.weight")));
    out.emplace_back(h + "attn.c_proj.bias", s.at(k + "self_attn.o.bias"));
    out.emplace_back(h + "ln_2.weight", s.at(k + "ln3.weight"));
    out.emplace_back(h + "ln_2.bias", s.at(k + "ln3.bias"));
    out.emplace_back(h + "mlp.c_fc.weight", transposed(s.at(k + "ff.fc1.weight")));
    out.emplace_back(h + "mlp.c_fc.bias", s.at(k + "ff.fc1.bias"));
    out.emplace_back(h + "mlp.c_proj.weight", transposed(s.at(k + "ff.fc2.weight")));
    out.emplace_back(h + "mlp.c_proj.bias", s.at(k + "ff.fc2.bias"));
  }
  out.emplace_back(p + "ln_f.weight", s.at("ln_f.weight"));
  out.emplace_back(p + "ln_f.bias", s.at("ln_f.bias"));
  export_head(out, s, m);
  return out;
}

// LoRA adapters. GPT-2 fuses q, k and v into one Conv1D, c_attn (out 3d):
// their adapters become one of rank n·r (n of q, k, v adapted), A stacked
// (n·r, d) and B block-diagonal (3d, n·r), a zero block where a part has no
// adapter, so B A is [B_q A_q; B_k A_k; B_v A_v] exactly; alpha grows n-fold
// to keep the scale alpha / r. The others map one to one.
std::vector<HfLora> gpt2_export_lora(const LoraAdapters& adapters, const models::ModelConfig& m, int64_t r,
                                     double alpha) {
  const int64_t d = m.d_model;
  LoraAdapters rest;
  std::vector<HfLora> out;
  std::map<std::string, int64_t> fused_layers;  // "layers.i." -> i, for the layers with a q, k or v adapter
  for (const auto& [path, ab] : adapters) {
    bool qkv = false;
    for (int64_t i = 0; i < m.layers && !qkv; ++i)
      for (const char* part : {"q", "k", "v"})
        if (path == str("layers.", i, ".self_attn.", part)) {
          fused_layers[str("layers.", i, ".")] = i;
          qkv = true;
        }
    if (!qkv) rest.emplace(path, ab);
  }
  for (const auto& [k, i] : fused_layers) {
    std::vector<const std::pair<Tensor, Tensor>*> parts;
    for (const char* part : {"q", "k", "v"}) {
      auto it = adapters.find(str(k, "self_attn.", part));
      parts.push_back(it == adapters.end() ? nullptr : &it->second);
    }
    int64_t n = 0;
    for (auto* p : parts) n += p != nullptr;
    const int64_t R = n * r;
    std::vector<float> A(size_t(R * d), 0.0f), B(size_t(3 * d * R), 0.0f);  // (R, d), (3d, R)
    int64_t row = 0;
    for (int64_t j = 0; j < 3; ++j) {
      if (!parts[size_t(j)]) continue;
      const std::vector<float> a = to_raw(parts[size_t(j)]->first, Device::cpu(), DType::Float32).to_vector<float>();
      const std::vector<float> b = to_raw(parts[size_t(j)]->second, Device::cpu(), DType::Float32).to_vector<float>();
      KS_CHECK(int64_t(a.size()) == r * d && int64_t(b.size()) == d * r, "peft export: layers.", i,
               ": adapter sizes are not (", r, ", ", d, ") and (", d, ", ", r, ")");
      std::copy(a.begin(), a.end(), A.begin() + row * d);
      for (int64_t o = 0; o < d; ++o)  // B's block: rows j·d.., columns row..
        for (int64_t c = 0; c < r; ++c) B[size_t((j * d + o) * R + row + c)] = b[size_t(o * r + c)];
      row += r;
    }
    out.push_back({str("transformer.h.", i, ".attn.c_attn"), from_vector(A, {R, d}), from_vector(B, {3 * d, R}), R,
                   alpha * double(n)});
  }
  for (HfLora& l : one_to_one_lora(
           rest, r, alpha,
           [&](const std::string& path) -> std::string {
             if (path == "head") return "lm_head";
             for (int64_t i = 0; i < m.layers; ++i) {
               const std::string k = str("layers.", i, "."), h = str("transformer.h.", i, ".");
               if (path == k + "self_attn.o") return h + "attn.c_proj";
               if (path == k + "ff.fc1") return h + "mlp.c_fc";
               if (path == k + "ff.fc2") return h + "mlp.c_proj";
             }
             return "";
           },
           "GPT-2"))
    out.push_back(std::move(l));
  return out;
}

HfArchitecture gpt2() {
  return {.name = "GPT2LMHeadModel",
          .model_type = "gpt2",
          .model_config = gpt2_model_config,
          .import_tensors = gpt2_import,
          .cannot_export = gpt2_cannot_export,
          .hf_config = gpt2_hf_config,
          .export_tensors = gpt2_export,
          .export_lora = gpt2_export_lora,
          .fan_in_fan_out = true};
}

}  // namespace

KS_HF_ARCHITECTURE(gpt2());

}  // namespace ks::interop
