// tools/interop/gguf_llama.cpp — a decoder_lm as llama.cpp's "llama" GGUF and
// back (tools/interop/gguf_llama.h), through the LlamaForCausalLM descriptor.
#include "tools/interop/gguf_llama.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>

#include "core/copy.h"
#include "core/error.h"
#include "datasets/hf_bpe.h"
#include "datasets/pretokenize_regex.h"
#include "nn/user_input.h"
#include "tools/interop/gguf_sentencepiece.h"
#include "tools/interop/hf_architecture.h"

namespace ks::interop {
namespace {

using nn::GgmlType;
using nn::GgufKind;
using nn::GgufValue;
using Kv = std::vector<std::pair<std::string, GgufValue>>;

// The GGUF architectures written and read, each through its HF descriptor.
// llama.cpp's llama rotates adjacent pairs of a head (its q/k rows are
// permuted, below); its qwen2 rotates j with j + p/2 as HF does (NEOX), and
// has biases on q, k and v.
struct GgufArch {
  const char* gguf;        // general.architecture, also its keys' prefix ("llama.block_count")
  const char* hf;          // the descriptor (tools/interop/llama.cpp, qwen2.cpp)
  const char* model_type;  // config.json's
  bool permute_rope;
  bool qkv_bias;
};
constexpr GgufArch kArchs[] = {{"llama", "LlamaForCausalLM", "llama", true, false},
                               {"qwen2", "Qwen2ForCausalLM", "qwen2", false, true}};
constexpr int kNormal = kTokenNormal, kControl = kTokenControl, kUserDefined = kTokenUserDefined,
              kUnused = kTokenUnused;
// gguf-py's LlamaFileType of each weight type; GGML_QUANT_VERSION.
constexpr uint32_t kQuantizationVersion = 2;
uint32_t file_type(GgmlType t) {
  switch (t) {
    case GgmlType::F32: return 0;    // ALL_F32
    case GgmlType::F16: return 1;    // MOSTLY_F16
    case GgmlType::Q8_0: return 7;   // MOSTLY_Q8_0
    case GgmlType::BF16: return 32;  // MOSTLY_BF16
  }
  return 0;
}

// One block's GGUF name of an HF Llama name ("" for none); layer i's in `i`.
struct NameMap {
  const char* hf;    // after "model.layers.i."
  const char* gguf;  // after "blk.i."
};
constexpr NameMap kLayerNames[] = {
    {"input_layernorm.weight", "attn_norm.weight"},    {"self_attn.q_proj.weight", "attn_q.weight"},
    {"self_attn.k_proj.weight", "attn_k.weight"},      {"self_attn.v_proj.weight", "attn_v.weight"},
    {"self_attn.o_proj.weight", "attn_output.weight"}, {"post_attention_layernorm.weight", "ffn_norm.weight"},
    {"mlp.gate_proj.weight", "ffn_gate.weight"},       {"mlp.up_proj.weight", "ffn_up.weight"},
    {"mlp.down_proj.weight", "ffn_down.weight"},       {"self_attn.q_proj.bias", "attn_q.bias"},
    {"self_attn.k_proj.bias", "attn_k.bias"},          {"self_attn.v_proj.bias", "attn_v.bias"}};

std::string gguf_name(const std::string& hf) {
  if (hf == "model.embed_tokens.weight") return "token_embd.weight";
  if (hf == "model.norm.weight") return "output_norm.weight";
  if (hf == "lm_head.weight") return "output.weight";
  const std::string prefix = "model.layers.";
  if (hf.rfind(prefix, 0) == 0) {
    const size_t dot = hf.find('.', prefix.size());
    const std::string i = hf.substr(prefix.size(), dot - prefix.size()), rest = hf.substr(dot + 1);
    for (const NameMap& m : kLayerNames)
      if (rest == m.hf) return str("blk.", i, ".", m.gguf);
  }
  return "";
}

// The HF Llama name of a GGUF name ("" for none): gguf_name's inverse.
std::string hf_name_of(const std::string& gguf) {
  if (gguf == "token_embd.weight") return "model.embed_tokens.weight";
  if (gguf == "output_norm.weight") return "model.norm.weight";
  if (gguf == "output.weight") return "lm_head.weight";
  if (gguf.rfind("blk.", 0) == 0) {
    const size_t dot = gguf.find('.', 4);
    const std::string i = gguf.substr(4, dot - 4), rest = gguf.substr(dot + 1);
    for (const NameMap& m : kLayerNames)
      if (rest == m.gguf) return str("model.layers.", i, ".", m.hf);
  }
  return "";
}

// q/k rows between HF's rotate_half layout and GGML's adjacent pairs, per head
// of p rows: to_gguf puts HF row s·p/2 + j at 2j + s; !to_gguf the reverse.
// w: (n·p, in), contiguous float32.
Tensor permute_rope_rows(const Tensor& w, int64_t heads, bool to_gguf) {
  const Tensor c = contiguous_raw(w);
  const int64_t rows = c.size(0), cols = c.size(1), p = rows / heads, half = p / 2;
  KS_CHECK(rows % heads == 0 && p % 2 == 0, "gguf: cannot permute ", rows, " rows over ", heads, " heads");
  Tensor out = Tensor::empty(c.sizes(), kFloat32, Device::cpu());
  const float* in = static_cast<const float*>(c.data_ptr());
  float* o = static_cast<float*>(out.data_ptr());
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t s = 0; s < 2; ++s)
      for (int64_t j = 0; j < half; ++j) {
        const int64_t hf_row = h * p + s * half + j, gguf_row = h * p + 2 * j + s;
        const int64_t from = to_gguf ? hf_row : gguf_row, to = to_gguf ? gguf_row : hf_row;
        std::copy(in + from * cols, in + (from + 1) * cols, o + to * cols);
      }
  return out;
}

// The tokenizer keys of a SentencePiece-style hf_bpe (tools/interop/gguf_sentencepiece.h).
void sp_tokenizer_metadata(Kv& kv, const data::HfBpeTokenizer& hf, int64_t vocab_size, std::string& notes) {
  SpVocab v = sp_vocab_from_tokenizer_json(hf.tokenizer_json(), vocab_size, notes);
  kv.emplace_back("tokenizer.ggml.model", GgufValue::str("llama"));
  kv.emplace_back("tokenizer.ggml.pre", GgufValue::str("default"));
  kv.emplace_back("tokenizer.ggml.tokens", GgufValue::string_array(std::move(v.tokens)));
  kv.emplace_back("tokenizer.ggml.scores", GgufValue::f32_array(std::move(v.scores)));
  kv.emplace_back("tokenizer.ggml.token_type", GgufValue::i32_array(std::move(v.types)));
  if (hf.eos_id() >= 0) {  // as the byte-level vocabulary's: bos = eos, never added
    kv.emplace_back("tokenizer.ggml.bos_token_id", GgufValue::u32(uint32_t(hf.eos_id())));
    kv.emplace_back("tokenizer.ggml.eos_token_id", GgufValue::u32(uint32_t(hf.eos_id())));
  }
  if (v.unk_id >= 0) kv.emplace_back("tokenizer.ggml.unknown_token_id", GgufValue::u32(uint32_t(v.unk_id)));
  kv.emplace_back("tokenizer.ggml.add_bos_token", GgufValue::boolean(false));
  kv.emplace_back("tokenizer.ggml.add_eos_token", GgufValue::boolean(false));
  kv.emplace_back("tokenizer.ggml.add_space_prefix", GgufValue::boolean(v.add_space_prefix));
}

// The tokenizer keys of an hf_bpe: byte-level ("gpt2") or SentencePiece-style ("llama"); refusals say why.
void tokenizer_metadata(Kv& kv, const data::Tokenizer* tokenizer, int64_t vocab_size, std::string& notes) {
  KS_CHECK(tokenizer != nullptr, "gguf export: the run has no tokenizer; llama.cpp needs one in the file");
  const auto* hf = dynamic_cast<const data::HfBpeTokenizer*>(tokenizer);
  KS_CHECK(hf != nullptr, "gguf export: the run's tokenizer is Keystone's own \"", tokenizer->type(),
           "\", which no llama.cpp tokenizer reproduces id for id (llama.cpp reads byte-level BPE as \"gpt2\" and ",
           "SentencePiece as \"llama\"); train or import the run with an hf_bpe tokenizer to export it to GGUF");
  const json tj = hf->tokenizer_json();
  const json& model = tj.at("model");
  const json& pre_tok = tj.value("pre_tokenizer", json());
  const bool sp = model.value("byte_fallback", false) || !tj.value("normalizer", json()).is_null() ||
                  (pre_tok.is_object() && pre_tok.value("type", "") == "Metaspace");
  if (sp) return sp_tokenizer_metadata(kv, *hf, vocab_size, notes);
  // GPT-2's ByteLevel with its regex -> "gpt-2"; a Split of Llama-3's regex then ByteLevel -> "llama-bpe".
  std::string pre;
  std::optional<data::SplitPattern> pattern;
  auto byte_level = [](const json& b, bool regex) {
    return b.is_object() && b.value("type", "") == "ByteLevel" && b.value("use_regex", true) == regex &&
           !b.value("add_prefix_space", false);
  };
  if (byte_level(pre_tok, true)) pattern = data::SplitPattern::Gpt2;
  if (pre_tok.is_object() && pre_tok.value("type", "") == "Sequence" && pre_tok.contains("pretokenizers") &&
      pre_tok["pretokenizers"].size() == 2 && byte_level(pre_tok["pretokenizers"][1], false)) {
    const json& split = pre_tok["pretokenizers"][0];
    if (split.value("type", "") == "Split" && split.contains("pattern") && split["pattern"].contains("Regex") &&
        split["pattern"]["Regex"].is_string())
      pattern = data::known_pattern(split["pattern"]["Regex"].get<std::string>());
  }
  const bool ignore_merges = model.value("ignore_merges", false);
  if (pattern == data::SplitPattern::Gpt2 && !ignore_merges) pre = "gpt-2";
  if (pattern == data::SplitPattern::Llama3 && ignore_merges) pre = "llama-bpe";
  if (pattern == data::SplitPattern::Qwen2 && !ignore_merges) pre = "qwen2";
  KS_CHECK(!pre.empty(), "gguf export: the run's hf_bpe pre-tokenizer (", nn::json_excerpt(pre_tok), ", ignore_merges ",
           ignore_merges ? "true" : "false", ") is none of llama.cpp's: GPT-2's ByteLevel ",
           "regex without ignore_merges (\"gpt-2\"), Llama-3's Split regex with ignore_merges (\"llama-bpe\"), ",
           "or Qwen2's without it (\"qwen2\")");

  std::vector<std::string> tokens(static_cast<size_t>(vocab_size));
  std::vector<int64_t> types(size_t(vocab_size), kUnused);
  for (int64_t i = 0; i < vocab_size; ++i) tokens[size_t(i)] = str("[PAD", i, "]");  // as convert_hf_to_gguf.py
  auto place = [&](int64_t id, const std::string& text, int type) {
    KS_CHECK(id >= 0 && id < vocab_size, "gguf export: token '", text, "' has id ", id, " past the model's ",
             "vocab_size ", vocab_size);
    tokens[size_t(id)] = text;
    types[size_t(id)] = type;
  };
  for (const auto& [text, id] : model.at("vocab").items()) place(id.get<int64_t>(), text, kNormal);
  for (const json& a : tj.value("added_tokens", json::array()))
    place(a.at("id").get<int64_t>(), a.at("content").get<std::string>(),
          a.value("special", false) ? kControl : kUserDefined);
  std::vector<std::string> merges;
  for (const json& m : model.at("merges")) {
    const auto [left, right] = merge_halves(m);
    KS_CHECK(left.find(' ') == std::string::npos && right.find(' ') == std::string::npos, "gguf export: merge [\"",
             left, "\", \"", right, "\"] holds a space, which GGUF's \"left right\" merges cannot spell");
    merges.push_back(left + " " + right);
  }
  kv.emplace_back("tokenizer.ggml.model", GgufValue::str("gpt2"));
  kv.emplace_back("tokenizer.ggml.pre", GgufValue::str(pre));
  kv.emplace_back("tokenizer.ggml.tokens", GgufValue::string_array(std::move(tokens)));
  kv.emplace_back("tokenizer.ggml.token_type", GgufValue::i32_array(std::move(types)));
  kv.emplace_back("tokenizer.ggml.merges", GgufValue::string_array(std::move(merges)));
  if (hf->eos_id() >= 0) {
    // A run keeps no begin-of-text id: bos is the end-of-text one, as the HF export writes, never added.
    kv.emplace_back("tokenizer.ggml.bos_token_id", GgufValue::u32(uint32_t(hf->eos_id())));
    kv.emplace_back("tokenizer.ggml.eos_token_id", GgufValue::u32(uint32_t(hf->eos_id())));
  }
  kv.emplace_back("tokenizer.ggml.add_bos_token", GgufValue::boolean(false));
  kv.emplace_back("tokenizer.ggml.add_eos_token", GgufValue::boolean(false));
}

// ---- import ------------------------------------------------------------------------------------

[[noreturn]] void fail(const nn::GgufFile& f, const std::string& problem) {
  throw Error(str("gguf import: ", f.where, ": ", problem));
}

bool is_integer(GgufKind k) {
  return k != GgufKind::Float32 && k != GgufKind::Float64 && k != GgufKind::Bool && k != GgufKind::String &&
         k != GgufKind::Array;
}

// A size or id key: an integer in [0, 2^31); absent: `fallback`, or an error when < 0.
int64_t integer_key(const nn::GgufFile& f, const std::string& key, int64_t fallback = -1) {
  const GgufValue* v = f.find(key);
  if (!v) {
    if (fallback < 0) fail(f, str("metadata '", key, "' is missing (llama.cpp needs it too)"));
    return fallback;
  }
  if (!is_integer(v->kind)) fail(f, str("metadata '", key, "' must be an integer, got ", nn::gguf_kind_name(v->kind)));
  const bool is_unsigned = v->kind == GgufKind::UInt64 || v->kind == GgufKind::UInt32;
  if ((is_unsigned && uint64_t(v->i) > uint64_t(INT32_MAX)) || (!is_unsigned && (v->i < 0 || v->i > INT32_MAX)))
    fail(f, str("metadata '", key, "' is out of range: ", v->i));
  return v->i;
}

int64_t positive_key(const nn::GgufFile& f, const std::string& key, int64_t fallback = -1) {
  const int64_t n = integer_key(f, key, fallback);
  if (n <= 0) fail(f, str("metadata '", key, "' must be positive, got ", n));
  return n;
}

// The shortest decimal that rounds to the same float32 (the file keeps eps and theta as f32:
// 1e-5 comes back as 1e-5, not 9.99999974737875e-06).
double shortest_decimal(float x) {
  for (int digits = 1; digits <= 9; ++digits) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.*g", digits, double(x));
    if (std::strtof(buf, nullptr) == x) return std::strtod(buf, nullptr);
  }
  return double(x);
}

double float_key(const nn::GgufFile& f, const std::string& key, double fallback, bool required) {
  const GgufValue* v = f.find(key);
  if (!v) {
    if (required) fail(f, str("metadata '", key, "' is missing (llama.cpp needs it too)"));
    return fallback;
  }
  if (v->kind == GgufKind::Float32) return shortest_decimal(float(v->f));
  if (v->kind == GgufKind::Float64) return v->f;
  fail(f, str("metadata '", key, "' must be a number (f32), got ", nn::gguf_kind_name(v->kind)));
}

std::string string_key(const nn::GgufFile& f, const std::string& key) {
  const GgufValue* v = f.find(key);
  if (!v) fail(f, str("metadata '", key, "' is missing"));
  if (v->kind != GgufKind::String)
    fail(f, str("metadata '", key, "' must be a string, got ", nn::gguf_kind_name(v->kind)));
  return v->s;
}

const GgufValue& array_key(const nn::GgufFile& f, const std::string& key, GgufKind elem, size_t length) {
  const GgufValue* v = f.find(key);
  if (!v) fail(f, str("metadata '", key, "' is missing (the tokenizer needs it)"));
  const bool ok = v->kind == GgufKind::Array && (v->elem == elem || (elem == GgufKind::Int32 && is_integer(v->elem)));
  if (!ok) fail(f, str("metadata '", key, "' must be an array of ", nn::gguf_kind_name(elem)));
  if (length != size_t(-1) && v->count() != length)
    fail(f, str("metadata '", key, "' has ", v->count(), " entries, but tokenizer.ggml.tokens has ", length));
  return *v;
}

int64_t eos_key(const nn::GgufFile& f, size_t n) {
  const int64_t eos = f.find("tokenizer.ggml.eos_token_id") ? integer_key(f, "tokenizer.ggml.eos_token_id") : -1;
  if (eos >= int64_t(n)) fail(f, str("tokenizer.ggml.eos_token_id ", eos, " is past the ", n, " tokens"));
  return eos;
}

// tokenizer.ggml.* (model "llama") -> a SentencePiece-style tokenizer.json (tools/interop/gguf_sentencepiece.h) ->
// hf_bpe.
std::unique_ptr<data::Tokenizer> import_sp_tokenizer(const nn::GgufFile& f) {
  const GgufValue& tokens = array_key(f, "tokenizer.ggml.tokens", GgufKind::String, size_t(-1));
  const size_t n = tokens.strings.size();
  SpVocab v;
  v.tokens = tokens.strings;
  v.scores = array_key(f, "tokenizer.ggml.scores", GgufKind::Float32, n).floats;
  for (size_t i = 0; i < n; ++i)
    if (!std::isfinite(v.scores[i])) fail(f, str("tokenizer.ggml.scores: token ", i, " has the score ", v.scores[i]));
  v.types = f.find("tokenizer.ggml.token_type") ? array_key(f, "tokenizer.ggml.token_type", GgufKind::Int32, n).ints
                                                : std::vector<int64_t>(n, kNormal);
  if (const GgufValue* p = f.find("tokenizer.ggml.add_space_prefix")) {
    if (p->kind != GgufKind::Bool)
      fail(f, str("metadata 'tokenizer.ggml.add_space_prefix' must be a bool, got ", nn::gguf_kind_name(p->kind)));
    v.add_space_prefix = p->i != 0;
  }
  if (f.find("tokenizer.ggml.unknown_token_id")) {
    v.unk_id = integer_key(f, "tokenizer.ggml.unknown_token_id");
    if (v.unk_id >= int64_t(n))
      fail(f, str("tokenizer.ggml.unknown_token_id ", v.unk_id, " is past the ", n, " tokens"));
  } else {
    const auto unk = std::find(v.types.begin(), v.types.end(), int64_t(kTokenUnknown));
    v.unk_id = unk == v.types.end() ? -1 : int64_t(unk - v.types.begin());
  }
  const int64_t eos = eos_key(f, n);
  return std::make_unique<data::HfBpeTokenizer>(sp_tokenizer_json(v, f.where), f.where + " (tokenizer.ggml.*)", eos);
}

// tokenizer.ggml.* (model "gpt2") -> a byte-level tokenizer.json -> hf_bpe.
std::unique_ptr<data::Tokenizer> import_tokenizer(const nn::GgufFile& f) {
  if (!f.find("tokenizer.ggml.model"))
    fail(f, "metadata 'tokenizer.ggml.model' is missing: the file has no tokenizer, and a run needs one");
  const std::string model = string_key(f, "tokenizer.ggml.model");
  if (model == "llama") return import_sp_tokenizer(f);
  if (model != "gpt2")
    fail(f, str("tokenizer.ggml.model \"", model, "\" is not supported (Keystone reads \"gpt2\", byte-level BPE, ",
                "and \"llama\", SentencePiece)"));
  const std::string pre = f.find("tokenizer.ggml.pre") ? string_key(f, "tokenizer.ggml.pre") : "default";
  json pre_tokenizer;
  bool ignore_merges = false;
  if (pre == "gpt-2") {
    pre_tokenizer = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}};
  } else if (pre == "llama-bpe" || pre == "llama3" || pre == "qwen2") {
    const bool qwen2 = pre == "qwen2";
    ignore_merges = !qwen2;
    const auto pattern = qwen2 ? data::SplitPattern::Qwen2 : data::SplitPattern::Llama3;
    pre_tokenizer = {
        {"type", "Sequence"},
        {"pretokenizers",
         {{{"type", "Split"},
           {"pattern", {{"Regex", data::pattern_text(pattern)}}},
           {"behavior", "Isolated"},
           {"invert", false}},
          {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", !qwen2}, {"use_regex", false}}}}};
  } else {
    fail(f, str("tokenizer.ggml.pre \"", pre, "\" is not supported (Keystone reads \"gpt-2\", \"llama-bpe\" and ",
                "\"qwen2\")"));
  }
  const GgufValue& tokens = array_key(f, "tokenizer.ggml.tokens", GgufKind::String, size_t(-1));
  const size_t n = tokens.strings.size();
  const GgufValue* types =
      f.find("tokenizer.ggml.token_type") ? &array_key(f, "tokenizer.ggml.token_type", GgufKind::Int32, n) : nullptr;
  const GgufValue& merges = array_key(f, "tokenizer.ggml.merges", GgufKind::String, size_t(-1));
  json vocab = json::object(), added = json::array(), merge_list = json::array();
  std::map<std::string, size_t> seen;
  for (size_t i = 0; i < n; ++i) {
    const std::string& text = tokens.strings[i];
    const int64_t type = types ? types->ints[i] : int64_t(kNormal);
    if (type == kUnused) continue;
    if (!seen.emplace(text, i).second)
      fail(f, str("tokenizer.ggml.tokens: \"", text, "\" is token ", seen[text], " and token ", i));
    if (type == kControl || type == kUserDefined) {
      added.push_back(gguf_added_token(i, text, type == kControl));
    } else if (type == kNormal) {
      vocab[text] = i;
    } else {
      fail(f, str("tokenizer.ggml.token_type: token ", i, " (\"", text, "\") has type ", type,
                  ", which a byte-level BPE does not have (1 normal, 3 control, 4 user-defined, 5 unused)"));
    }
  }
  for (const std::string& m : merges.strings) {
    const size_t space = m.find(' ');
    if (space == std::string::npos || m.find(' ', space + 1) != std::string::npos)
      fail(f, str("tokenizer.ggml.merges: \"", m, "\" is not \"left right\""));
    merge_list.push_back({m.substr(0, space), m.substr(space + 1)});
  }
  const json tj = {
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens", added},
      {"normalizer", nullptr},
      {"pre_tokenizer", pre_tokenizer},
      {"post_processor", nullptr},
      {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}}},
      {"model",
       {{"type", "BPE"},
        {"dropout", nullptr},
        {"unk_token", nullptr},
        {"continuing_subword_prefix", ""},
        {"end_of_word_suffix", ""},
        {"fuse_unk", false},
        {"byte_fallback", false},
        {"ignore_merges", ignore_merges},
        {"vocab", vocab},
        {"merges", merge_list}}}};
  return std::make_unique<data::HfBpeTokenizer>(tj, f.where + " (tokenizer.ggml.*)", eos_key(f, n));
}

}  // namespace

GgmlType gguf_weight_type(const std::string& word) {
  if (word == "f32") return GgmlType::F32;
  if (word == "f16") return GgmlType::F16;
  if (word == "bf16") return GgmlType::BF16;
  if (word == "q8_0") return GgmlType::Q8_0;
  throw Error(str("gguf export: --type ", word, " is not one of f32, f16, bf16, q8_0"));
}

std::string gguf_from_run(const models::ModelConfig& cfg, const nn::NamedTensors& state,
                          const data::Tokenizer* tokenizer, GgmlType type, const std::string& name, std::string& notes,
                          std::string& architecture) {
  // The first architecture whose descriptor expresses the run: a Llama, or a
  // Qwen2 (biases on q, k and v only).
  const GgufArch* arch = nullptr;
  std::string why;
  for (const GgufArch& c : kArchs) {
    const std::string no = hf_architecture(c.hf, "gguf export").cannot_export(cfg);
    if (no.empty()) {
      arch = &c;
      break;
    }
    why += str("\n  ", c.gguf, " (as ", c.hf, "): ", no);
  }
  KS_CHECK(arch != nullptr, "gguf export: no GGUF architecture Keystone writes can express the run's model:", why);
  const HfArchitecture& a = hf_architecture(arch->hf, "gguf export");
  architecture = arch->gguf;
  KS_CHECK(cfg.attention.window <= 0, "gguf export: attention.window ", cfg.attention.window, ": llama.cpp's ",
           arch->gguf, " attends to every earlier position (no sliding window)");
  const json hc = a.hf_config(cfg);
  KS_CHECK(!hc.contains("rope_scaling") || hc["rope_scaling"].is_null(), "gguf export: rope_scaling ",
           nn::json_excerpt(hc["rope_scaling"]), " is not written to GGUF yet");
  const int64_t d = cfg.d_model, h = cfg.attention.heads, g = cfg.attention.resolved_kv_heads();
  const int64_t p = cfg.attention.resolved_head_dim();
  const std::string k = str(arch->gguf, ".");  // the prefix of the architecture's keys

  Kv kv;
  kv.emplace_back("general.architecture", GgufValue::str(arch->gguf));
  kv.emplace_back("general.type", GgufValue::str("model"));
  kv.emplace_back("general.name", GgufValue::str(name));
  kv.emplace_back("general.file_type", GgufValue::u32(file_type(type)));
  kv.emplace_back("general.quantization_version", GgufValue::u32(kQuantizationVersion));
  kv.emplace_back(k + "vocab_size", GgufValue::u32(uint32_t(cfg.vocab_size)));
  kv.emplace_back(k + "context_length", GgufValue::u32(uint32_t(cfg.max_len)));
  kv.emplace_back(k + "embedding_length", GgufValue::u32(uint32_t(d)));
  kv.emplace_back(k + "block_count", GgufValue::u32(uint32_t(cfg.layers)));
  kv.emplace_back(k + "feed_forward_length", GgufValue::u32(uint32_t(cfg.resolved_d_ff())));
  kv.emplace_back(k + "attention.head_count", GgufValue::u32(uint32_t(h)));
  kv.emplace_back(k + "attention.head_count_kv", GgufValue::u32(uint32_t(g)));
  kv.emplace_back(k + "rope.freq_base", GgufValue::f32(hc.at("rope_theta").get<float>()));
  kv.emplace_back(k + "attention.layer_norm_rms_epsilon", GgufValue::f32(float(cfg.norm_eps)));
  kv.emplace_back(k + "rope.dimension_count", GgufValue::u32(uint32_t(p)));
  if (p * h != d) {  // llama.cpp's default is embedding_length / head_count
    kv.emplace_back(k + "attention.key_length", GgufValue::u32(uint32_t(p)));
    kv.emplace_back(k + "attention.value_length", GgufValue::u32(uint32_t(p)));
  }
  tokenizer_metadata(kv, tokenizer, cfg.vocab_size, notes);

  std::vector<nn::GgufTensorOut> out;
  for (const auto& [hf_name, t] : a.export_tensors(state, cfg)) {
    const std::string gname = gguf_name(hf_name);
    KS_CHECK(!gname.empty() && (arch->qkv_bias || gname.find(".bias") == std::string::npos), "gguf export: tensor '",
             hf_name, "' has no ", arch->gguf, " GGUF name");
    Tensor w = contiguous_raw(t);
    if (arch->permute_rope && gname.find("attn_q.weight") != std::string::npos) w = permute_rope_rows(w, h, true);
    if (arch->permute_rope && gname.find("attn_k.weight") != std::string::npos) w = permute_rope_rows(w, g, true);
    // As convert_hf_to_gguf.py: 1-D tensors (the norms, the biases) stay F32;
    // Q8_0 rows not of whole 32-value blocks fall back to F16.
    GgmlType tt = w.dim() <= 1 ? GgmlType::F32 : type;
    if (tt == GgmlType::Q8_0 && w.size(w.dim() - 1) % 32 != 0) {
      tt = GgmlType::F16;
      notes += str("note: ", gname, " has rows of ", w.size(w.dim() - 1),
                   " values, not whole Q8_0 blocks of 32: ", "stored F16, as convert_hf_to_gguf.py does\n");
    }
    out.push_back({gname, w.sizes(), tt, nn::gguf_encode(w, tt)});
  }
  return nn::gguf_to_bytes(kv, out);
}

GgufRun gguf_to_run(const nn::GgufFile& f) {
  const std::string arch_name = string_key(f, "general.architecture");
  const GgufArch* arch = nullptr;
  for (const GgufArch& c : kArchs)
    if (arch_name == c.gguf) arch = &c;
  if (!arch)
    fail(f, str("general.architecture \"", arch_name, "\" is not supported (Keystone reads \"llama\" and \"qwen2\")"));
  const std::string k = arch_name + ".";  // the prefix of the architecture's keys
  if (const GgufValue* e = f.find(k + "expert_count"); e && is_integer(e->kind) && e->i > 0)
    fail(f, str(k, "expert_count ", e->i, ": mixture-of-experts ", arch_name, " files are not supported"));
  if (const GgufValue* s = f.find(k + "rope.scaling.type"); s && !(s->kind == GgufKind::String && s->s == "none"))
    fail(f, str(k, "rope.scaling.type ", s->kind == GgufKind::String ? "\"" + s->s + "\"" : "(not a string)",
                " is not supported (Keystone's rope turns by rope.freq_base alone)"));

  const int64_t d = positive_key(f, k + "embedding_length"), layers = positive_key(f, k + "block_count");
  const int64_t ff = positive_key(f, k + "feed_forward_length"), h = positive_key(f, k + "attention.head_count");
  const int64_t ctx = positive_key(f, k + "context_length");
  const int64_t g = positive_key(f, k + "attention.head_count_kv", h);
  if (h % g != 0) fail(f, str(k, "attention.head_count_kv ", g, " does not divide ", k, "attention.head_count ", h));
  if (!f.find(k + "attention.key_length") && d % h != 0)
    fail(f, str(k, "attention.head_count ", h, " does not divide ", k, "embedding_length ", d));
  const int64_t p = positive_key(f, k + "attention.key_length", d / h);
  if (positive_key(f, k + "attention.value_length", p) != p)
    fail(f, str(k, "attention.value_length differs from ", k, "attention.key_length ", p, " (not supported)"));
  if (positive_key(f, k + "rope.dimension_count", p) != p)
    fail(f, str(k, "rope.dimension_count ", integer_key(f, k + "rope.dimension_count"),
                " rotates part of each head of ", p, ": partial rope is not supported"));
  if (p % 2 != 0) fail(f, str("the head size ", p, " is odd: rope needs an even one"));
  const double eps = float_key(f, k + "attention.layer_norm_rms_epsilon", 0, true);
  const double theta = float_key(f, k + "rope.freq_base", 10000.0, false);
  const nn::GgufTensorInfo* embd = f.tensor("token_embd.weight");
  if (!embd) fail(f, "tensor 'token_embd.weight' is missing");
  const int64_t vocab = f.find(k + "vocab_size")          ? positive_key(f, k + "vocab_size")
                        : f.find("tokenizer.ggml.tokens") ? int64_t(f.find("tokenizer.ggml.tokens")->count())
                        : embd->dims.size() == 2          ? embd->dims[1]
                                                          : 0;
  if (vocab <= 0)
    fail(f, str("the vocabulary size is unknown (no ", k, "vocab_size, tokens or 2-D token_embd.weight)"));
  const bool tied = f.tensor("output.weight") == nullptr;

  json hc = {{"architectures", {arch->hf}},
             {"model_type", arch->model_type},
             {"vocab_size", vocab},
             {"hidden_size", d},
             {"intermediate_size", ff},
             {"num_hidden_layers", layers},
             {"num_attention_heads", h},
             {"num_key_value_heads", g},
             {"head_dim", p},
             {"hidden_act", "silu"},
             {"max_position_embeddings", ctx},
             {"rms_norm_eps", eps},
             {"rope_theta", theta},
             {"tie_word_embeddings", tied}};
  if (arch->qkv_bias) hc["use_sliding_window"] = false;  // Qwen2's config.json says so; llama.cpp has no window
  const HfArchitecture& a = hf_architecture(arch->hf, f.where);
  const HfConfig config(hc, str(f.where, " (", k, "* metadata)"));
  GgufRun run;
  run.architecture = arch_name;
  run.hf_architecture = arch->hf;
  run.model = models::parse_model_config(a.model_config(config).to_json());

  // Every tensor's shape against the metadata, named as the file names it; then the HF names.
  const std::string ds = str(k, "embedding_length ", d), vs = str("vocab ", vocab, ", ", ds);
  const std::string qs = str(ds, ", ", k, "attention.head_count ", h, ", head size ", p);
  const std::string kvs = str(ds, ", ", k, "attention.head_count_kv ", g, ", head size ", p);
  const std::string fs = str(ds, ", ", k, "feed_forward_length ", ff);
  std::map<std::string, std::pair<Shape, std::string>> want = {{"token_embd.weight", {{vocab, d}, vs}},
                                                               {"output_norm.weight", {{d}, ds}}};
  if (!tied) want["output.weight"] = {{vocab, d}, vs};
  for (int64_t i = 0; i < layers; ++i) {
    const std::string b = str("blk.", i, ".");
    want[b + "attn_norm.weight"] = {{d}, ds};
    want[b + "ffn_norm.weight"] = {{d}, ds};
    want[b + "attn_q.weight"] = {{h * p, d}, qs};
    want[b + "attn_k.weight"] = {{g * p, d}, kvs};
    want[b + "attn_v.weight"] = {{g * p, d}, kvs};
    want[b + "attn_output.weight"] = {{d, h * p}, qs};
    want[b + "ffn_gate.weight"] = {{ff, d}, fs};
    want[b + "ffn_up.weight"] = {{ff, d}, fs};
    want[b + "ffn_down.weight"] = {{d, ff}, fs};
    if (arch->qkv_bias) {
      want[b + "attn_q.bias"] = {{h * p}, qs};
      want[b + "attn_k.bias"] = {{g * p}, kvs};
      want[b + "attn_v.bias"] = {{g * p}, kvs};
    }
  }
  for (const nn::GgufTensorInfo& t : f.tensors)
    if (!want.count(t.name))
      fail(f, str("tensor '", t.name, "' is not part of ", arch_name, " (or not of the model the metadata describes)"));
  nn::NamedTensors hf_tensors;
  std::map<std::string, int> type_counts;
  for (const auto& [name, shape_why] : want) {
    const nn::GgufTensorInfo* t = f.tensor(name);
    if (!t) fail(f, str("tensor '", name, "' is missing"));
    if (t->shape() != shape_why.first)
      fail(f, str("tensor '", name, "' has shape ", t->shape(), " (GGUF dims reversed) but the metadata (",
                  shape_why.second, ") needs ", shape_why.first));
    Tensor w = nn::gguf_tensor_float32(f, *t);
    if (arch->permute_rope && name.find("attn_q.weight") != std::string::npos) w = permute_rope_rows(w, h, false);
    if (arch->permute_rope && name.find("attn_k.weight") != std::string::npos) w = permute_rope_rows(w, g, false);
    hf_tensors.emplace_back(hf_name_of(name), w);
    ++type_counts[nn::ggml_type_name(t->type)];
  }
  for (const auto& [type, count] : type_counts) run.types += str(run.types.empty() ? "" : ", ", type, " x", count);
  HfTensors tensors(hf_tensors, f.where);
  run.weights = a.import_tensors(tensors, config, run.model);
  tensors.check_all_taken(arch->hf);
  run.tokenizer = import_tokenizer(f);
  KS_CHECK(run.tokenizer->vocab_size() <= vocab, "gguf import: ", f.where, ": the tokenizer has ids up to ",
           run.tokenizer->vocab_size() - 1, " but the model's vocabulary is ", vocab);
  return run;
}

}  // namespace ks::interop
