// tools/interop/gguf_sentencepiece.cpp — a SentencePiece-style tokenizer.json
// as llama.cpp's "llama" vocabulary and back (tools/interop/gguf_sentencepiece.h
// says when the two tokenize alike, and what is refused).
#include "tools/interop/gguf_sentencepiece.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "core/error.h"
#include "datasets/vocab.h"
#include "nn/user_input.h"

namespace ks::interop {
namespace {

using nlohmann::json;
const std::string kMeta = "\u2581";

bool is_byte_token(const std::string& t) {
  auto hex = [](char c) { return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F'); };
  return t.size() == 6 && t.compare(0, 3, "<0x") == 0 && hex(t[3]) && hex(t[4]) && t[5] == '>';
}

// The byte offsets where t may be cut into two non-empty pieces (UTF-8 character boundaries).
std::vector<size_t> cuts(const std::string& t) {
  std::vector<size_t> at;
  for (size_t i = 1; i < t.size(); ++i)
    if ((static_cast<unsigned char>(t[i]) & 0xC0) != 0x80) at.push_back(i);
  return at;
}

bool one_character(const std::string& s) { return !s.empty() && cuts(s).empty(); }

std::string pair_key(const std::string& l, const std::string& r) { return l + '\0' + r; }

// What the normalizer and pre-tokenizer do to spaces, as llama.cpp can repeat it.
struct Spaces {
  bool to_meta = false;  // " " becomes "▁"
  bool prefix = false;   // "▁" in front
  bool first_only = false;
  bool split = false;  // a Metaspace pre-tokenizer cuts before each "▁"
};

void read_normalizer(const json& n, Spaces& s) {
  const std::string type = n.value("type", "");
  if (type == "Sequence") {
    for (const json& m : n.at("normalizers")) read_normalizer(m, s);
  } else if (type == "Prepend") {
    KS_CHECK(n.value("prepend", "") == kMeta, "gguf export: normalizer Prepend ", nn::json_excerpt(n),
             ": llama.cpp's SentencePiece tokenizer can only put \"\u2581\" in front");
    s.prefix = true;
  } else if (type == "Replace") {
    KS_CHECK(n.value("content", "") == kMeta, "gguf export: normalizer Replace ", nn::json_excerpt(n),
             ": llama.cpp's SentencePiece tokenizer turns spaces into \"\u2581\", nothing else");
    s.to_meta = true;
  }
}

Spaces read_spaces(const json& tj) {
  Spaces s;
  const json& norm = tj.value("normalizer", json());
  if (norm.is_object()) read_normalizer(norm, s);
  const json& pre = tj.value("pre_tokenizer", json());
  if (pre.is_object() && pre.value("type", "") == "Metaspace") {
    s.to_meta = true;
    std::string scheme = pre.value("prepend_scheme", "");
    if (scheme.empty()) scheme = pre.value("add_prefix_space", true) ? "always" : "never";
    s.prefix = scheme != "never";
    s.first_only = scheme == "first";
    s.split = pre.value("split", true);
  }
  KS_CHECK(s.to_meta, "gguf export: the tokenizer keeps spaces as they are (no Replace \" \" -> \"\u2581\" ",
           "normalizer, no Metaspace pre-tokenizer); llama.cpp's SentencePiece tokenizer always turns them into "
           "\"\u2581\"");
  return s;
}

}  // namespace

SpVocab sp_vocab_from_tokenizer_json(const json& tj, int64_t vocab_size, std::string& notes) {
  const json& model = tj.at("model");
  const Spaces spaces = read_spaces(tj);
  SpVocab v;
  v.add_space_prefix = spaces.prefix;
  if (spaces.first_only)
    notes +=
        "note: the pre-tokenizer's prepend_scheme is \"first\"; llama.cpp puts \"\u2581\" after every special "
        "token too, so its ids differ from Keystone's where a special token stands inside a text\n";
  v.tokens.resize(size_t(vocab_size));
  v.types.assign(size_t(vocab_size), kTokenUnused);
  for (int64_t i = 0; i < vocab_size; ++i) v.tokens[size_t(i)] = str("[PAD", i, "]");  // as convert_hf_to_gguf.py
  std::unordered_map<std::string, int64_t> id_of;
  auto place = [&](int64_t id, const std::string& text, int type) {
    KS_CHECK(id >= 0 && id < vocab_size, "gguf export: token '", text, "' has id ", id, " past the model's ",
             "vocab_size ", vocab_size);
    const auto [it, fresh] = id_of.emplace(text, id);
    KS_CHECK(fresh || it->second == id, "gguf export: \"", text, "\" is token ", it->second, " and token ", id,
             "; llama.cpp finds a token by its text");
    v.tokens[size_t(id)] = text;
    v.types[size_t(id)] = type;
  };
  std::unordered_set<std::string> in_model;  // the BPE's own vocabulary: what its merges may make
  for (const auto& [text, id] : model.at("vocab").items()) {
    place(id.get<int64_t>(), text, is_byte_token(text) ? kTokenByte : kTokenNormal);
    in_model.insert(text);
  }
  for (const json& a : tj.value("added_tokens", json::array()))
    place(a.at("id").get<int64_t>(), a.at("content").get<std::string>(),
          a.value("special", false) ? kTokenControl : kTokenUserDefined);
  const json& unk = model.value("unk_token", json());
  if (unk.is_string() && id_of.count(unk.get<std::string>())) {
    v.unk_id = id_of.at(unk.get<std::string>());
    v.types[size_t(v.unk_id)] = kTokenUnknown;
  }

  // 3. Byte fallback with every byte: llama.cpp spells any character that is no token in bytes.
  const int bytes = byte_tokens_held([&](const std::string& t) { return in_model.count(t) > 0; });
  KS_CHECK(model.value("byte_fallback", false) && bytes == 256, "gguf export: the tokenizer ",
           model.value("byte_fallback", false) ? str("has ", bytes, " of the 256 byte tokens (\"<0x00>\".. \"<0xFF>\")")
                                               : std::string("has no byte_fallback"),
           "; llama.cpp's SentencePiece tokenizer spells a character that is no token in byte tokens, and "
           "needs all 256");

  // The merges: the rank of each pair, and the ranks of the merges that make each token.
  struct Made {
    int64_t first = -1, last = -1, count = 0;
  };
  std::unordered_map<std::string, int64_t> rank_of;
  std::unordered_map<std::string, Made> made;
  const json& merges = model.at("merges");
  for (size_t r = 0; r < merges.size(); ++r) {
    const json& m = merges[r];
    const auto [l, rt] = merge_halves(m);
    rank_of.emplace(pair_key(l, rt), int64_t(r));
    Made& t = made[l + rt];
    if (t.count == 0) t.first = int64_t(r);
    t.last = int64_t(r);
    ++t.count;
  }
  // 1. Complete merges, and 2. consecutive ones.
  auto symbol = [&](const std::string& s) { return in_model.count(s) > 0 || one_character(s); };
  for (const auto& [text, id] : id_of) {
    for (size_t at : cuts(text)) {
      const std::string l = text.substr(0, at), r = text.substr(at);
      if (!symbol(l) || !symbol(r) || rank_of.count(pair_key(l, r))) continue;
      const std::string which =
          !in_model.count(text) ? "it is an added token, which merges never make"
          : !in_model.count(l)  ? str("\"", l, "\" is no token (a character the merges cannot use)")
          : !in_model.count(r)  ? str("\"", r, "\" is no token (a character the merges cannot use)")
                                : "the merges do not list that pair";
      throw Error(str("gguf export: \"", l, "\" + \"", r, "\" make the token \"", text, "\" (id ", id, "), but ", which,
                      ": llama.cpp's SentencePiece tokenizer merges any two pieces that make a token, so its ids "
                      "would differ from Keystone's (a merge list derived from a SentencePiece model lists them all)"));
    }
  }
  for (const auto& [text, m] : made) {
    KS_CHECK(in_model.count(text), "gguf export: the merges make \"", text, "\", which is not in model.vocab");
    KS_CHECK(m.last - m.first + 1 == m.count, "gguf export: the ", m.count, " merges that make \"", text,
             "\" are not consecutive in the merge list (ranks ", m.first, " to ", m.last,
             "); llama.cpp ranks a merge by the score of the token it makes, one score per token");
  }
  // Scores: a token made by merges scores minus the rank of its first one; the rest below all of them.
  const int64_t n_merges = int64_t(merges.size());
  v.scores.resize(size_t(vocab_size));
  for (int64_t i = 0; i < vocab_size; ++i) {
    const auto it = made.find(v.tokens[size_t(i)]);
    const bool merged = it != made.end() && v.types[size_t(i)] != kTokenUnused && id_of.at(v.tokens[size_t(i)]) == i;
    v.scores[size_t(i)] = double(merged ? -it->second.first : -(n_merges + i));  // 0, not -0
  }
  // A Metaspace split keeps merges inside a piece that starts at "▁"; llama.cpp has no such cut.
  if (spaces.split)
    for (const std::string& t : in_model)
      KS_CHECK(t.find(kMeta, 1) == std::string::npos, "gguf export: the token \"", t,
               "\" holds \"\u2581\" after its start, which the Metaspace pre-tokenizer's split never lets the merges "
               "make but llama.cpp's SentencePiece tokenizer would");
  return v;
}

std::pair<std::string, std::string> merge_halves(const json& merge) {
  if (merge.is_array()) return {merge[0].get<std::string>(), merge[1].get<std::string>()};
  const std::string s = merge.get<std::string>();
  return {s.substr(0, s.find(' ')), s.substr(s.find(' ') + 1)};
}

int byte_tokens_held(const std::function<bool(const std::string&)>& has) {
  int held = 0;
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    held += has(name) ? 1 : 0;
  }
  return held;
}

json gguf_added_token(size_t id, const std::string& text, bool special) {
  return {{"id", id},        {"content", text},     {"single_word", false}, {"lstrip", false},
          {"rstrip", false}, {"normalized", false}, {"special", special}};
}

json sp_tokenizer_json(const SpVocab& v, const std::string& where) {
  const size_t n = v.tokens.size();
  json vocab = json::object(), added = json::array();
  std::unordered_map<std::string, int64_t> id_of;  // the BPE's vocabulary
  for (size_t i = 0; i < n; ++i) {
    const std::string& text = v.tokens[i];
    const int64_t type = v.types[i];
    if (type == kTokenUnused) continue;
    KS_CHECK(data::is_utf8(text), where, ": tokenizer.ggml.tokens: token ", i, " is not valid UTF-8");
    KS_CHECK(type >= kTokenNormal && type <= kTokenByte, where, ": tokenizer.ggml.token_type: token ", i, " (\"", text,
             "\") has type ", type, " (1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte)");
    KS_CHECK(type != kTokenByte || is_byte_token(text), where, ": tokenizer.ggml.tokens: token ", i, " (\"", text,
             "\") has the byte type but is not \"<0xAB>\"");
    if (type != kTokenUserDefined) {
      const auto [it, fresh] = id_of.emplace(text, int64_t(i));
      KS_CHECK(fresh, where, ": tokenizer.ggml.tokens: \"", text, "\" is token ", it->second, " and token ", i);
      vocab[text] = i;
    }
    if (type == kTokenControl || type == kTokenUnknown || type == kTokenUserDefined)
      added.push_back(gguf_added_token(i, text, type != kTokenUserDefined));
  }
  // The merges as SentencePieceExtractor derives them: every cut of a token into two tokens, the
  // token's cuts by the ids of their halves, tokens by score (highest first, then by id).
  struct Piece {
    double score;
    int64_t id;
  };
  std::vector<Piece> pieces;
  std::vector<std::vector<std::pair<int64_t, int64_t>>> cut_of(n);
  for (const auto& [text, id] : id_of) {
    for (size_t at : cuts(text)) {
      const auto l = id_of.find(text.substr(0, at)), r = id_of.find(text.substr(at));
      const bool l_in = l != id_of.end(), r_in = r != id_of.end();
      if (l_in && r_in) cut_of[size_t(id)].emplace_back(l->second, r->second);
      // A character that is no token, beside a token or another character: llama.cpp merges the two, a
      // merge list cannot (HF's merges join tokens only).
      const std::string ls = text.substr(0, at), rs = text.substr(at);
      KS_CHECK((l_in && r_in) || !(l_in || one_character(ls)) || !(r_in || one_character(rs)), where, ": token ", id,
               " (\"", text, "\") is made in llama.cpp from the character \"", l_in ? rs : ls,
               "\", which is no token: a merge list cannot say so");
    }
    if (!cut_of[size_t(id)].empty()) pieces.push_back({v.scores[size_t(id)], id});
  }
  std::sort(pieces.begin(), pieces.end(),
            [](const Piece& a, const Piece& b) { return a.score > b.score || (a.score == b.score && a.id < b.id); });
  for (size_t i = 1; i < pieces.size(); ++i)
    KS_CHECK(pieces[i].score != pieces[i - 1].score, where, ": tokenizer.ggml.scores: tokens ", pieces[i - 1].id,
             " (\"", v.tokens[size_t(pieces[i - 1].id)], "\") and ", pieces[i].id, " (\"",
             v.tokens[size_t(pieces[i].id)], "\") share the score ", pieces[i].score,
             ": llama.cpp breaks such ties by position in the text, which a merge list cannot express");
  json merges = json::array();
  for (const Piece& p : pieces) {
    auto& c = cut_of[size_t(p.id)];
    std::sort(c.begin(), c.end());
    for (const auto& [l, r] : c) merges.push_back({v.tokens[size_t(l)], v.tokens[size_t(r)]});
  }
  const bool all_bytes = byte_tokens_held([&](const std::string& t) { return id_of.count(t) > 0; }) == 256;
  json normalizer = {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", kMeta}};
  if (v.add_space_prefix)
    normalizer = {{"type", "Sequence"}, {"normalizers", {{{"type", "Prepend"}, {"prepend", kMeta}}, normalizer}}};
  const json decoder = {{"type", "Sequence"},
                        {"decoders",
                         {{{"type", "Replace"}, {"pattern", {{"String", kMeta}}}, {"content", " "}},
                          {{"type", "ByteFallback"}},
                          {{"type", "Fuse"}},
                          {{"type", "Strip"}, {"content", " "}, {"start", v.add_space_prefix ? 1 : 0}, {"stop", 0}}}}};
  const json unk = v.unk_id >= 0 ? json(v.tokens[size_t(v.unk_id)]) : json();
  return {{"version", "1.0"},
          {"truncation", nullptr},
          {"padding", nullptr},
          {"added_tokens", added},
          {"normalizer", normalizer},
          {"pre_tokenizer", nullptr},
          {"post_processor", nullptr},
          {"decoder", decoder},
          {"model",
           {{"type", "BPE"},
            {"dropout", nullptr},
            {"unk_token", unk},
            {"continuing_subword_prefix", nullptr},
            {"end_of_word_suffix", nullptr},
            {"fuse_unk", true},
            {"byte_fallback", all_bytes},
            {"vocab", vocab},
            {"merges", merges}}}};
}

}  // namespace ks::interop
