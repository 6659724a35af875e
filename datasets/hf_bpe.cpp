// datasets/hf_bpe.cpp — reading a tokenizer.json's byte-level BPE, encoding by
// merge rank, exact decoding, and the saved form.
#include "datasets/hf_bpe.h"

#include <algorithm>
#include <array>

#include "core/error.h"
#include "datasets/tokenizer_json.h"
#include "datasets/unicode_classes.h"

namespace ks::data {

using detail::json;

namespace {

std::string utf8(char32_t c) {
  std::string s;
  if (c < 0x80) {
    s += char(c);
  } else if (c < 0x800) {
    s += char(0xC0 | (c >> 6));
    s += char(0x80 | (c & 0x3F));
  } else {
    s += char(0xE0 | (c >> 12));
    s += char(0x80 | ((c >> 6) & 0x3F));
    s += char(0x80 | (c & 0x3F));
  }
  return s;
}

// GPT-2's bytes_to_unicode: the printable bytes ! .. ~, ¡ .. ¬ and ® .. ÿ stand for
// themselves; the other 68 take U+0100 upwards in byte order.
const std::array<std::string, 256>& byte_chars() {
  static const std::array<std::string, 256> table = [] {
    std::array<std::string, 256> t;
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      t[size_t(b)] = utf8(printable ? char32_t(b) : next++);
    }
    return t;
  }();
  return table;
}

// Byte-level text (a vocabulary entry) back to bytes; nullopt when a
// character is not one of the 256.
std::optional<std::string> to_bytes(const std::string& token) {
  static const std::unordered_map<char32_t, unsigned char> back = [] {
    std::unordered_map<char32_t, unsigned char> m;
    for (int b = 0; b < 256; ++b) m[unicode::decode_utf8(byte_chars()[size_t(b)])[0].c] = static_cast<unsigned char>(b);
    return m;
  }();
  std::string out;
  for (const auto& cp : unicode::decode_utf8(token)) {
    auto it = back.find(cp.c);
    if (it == back.end() || cp.end - cp.begin != utf8(cp.c).size()) return std::nullopt;
    out += char(it->second);
  }
  return out;
}

uint64_t key(int64_t a, int64_t b) { return uint64_t(a) << 32 | uint64_t(b); }

bool is_null_or_absent(const json& j, const char* k) { return !j.contains(k) || j.at(k).is_null(); }

// obj[key] (`obj` an object, `path` its place: "model.") when present and not
// null, else `fallback`; a value of another type is an error naming the file
// (`at`) and the key, never nlohmann's "type must be boolean, but is string".
std::string text_or(const json& obj, const char* key, const std::string& fallback, const std::string& at,
                    const std::string& path) {
  if (is_null_or_absent(obj, key)) return fallback;
  KS_CHECK(obj.at(key).is_string(), at, path, key, ": expected a string, got ", nn::json_excerpt(obj.at(key)));
  return obj.at(key).get<std::string>();
}
bool flag_or(const json& obj, const char* key, bool fallback, const std::string& at, const std::string& path) {
  if (is_null_or_absent(obj, key)) return fallback;
  KS_CHECK(obj.at(key).is_boolean(), at, path, key, ": expected true or false, got ", nn::json_excerpt(obj.at(key)));
  return obj.at(key).get<bool>();
}

}  // namespace

HfBpeTokenizer::HfBpeTokenizer(json tj, const std::string& where, int64_t eos_id) : json_(std::move(tj)) {
  const std::string at = str("load_tokenizer: ", where, ": ");
  KS_CHECK(json_.is_object(), at, "a tokenizer.json must be a JSON object");
  KS_CHECK(json_.contains("model") && json_["model"].is_object(), at, "missing the \"model\" object");
  const json& model = json_["model"];
  const std::string mtype = text_or(model, "type", "BPE", at, "model.");
  KS_CHECK(mtype == "BPE", at, "model.type \"", mtype, "\": only byte-level BPE is supported");
  KS_CHECK(!flag_or(model, "byte_fallback", false, at, "model."), at,
           "model.byte_fallback: byte fallback (SentencePiece-style) ", "is not supported, only byte-level BPE");
  for (const char* k : {"continuing_subword_prefix", "end_of_word_suffix"})
    KS_CHECK(is_null_or_absent(model, k) || model[k] == "", at, "model.", k,
             " is not supported (byte-level BPE has none)");
  KS_CHECK(is_null_or_absent(model, "dropout") || model["dropout"] == 0, at,
           "model.dropout: BPE dropout is not supported");
  ignore_merges_ = flag_or(model, "ignore_merges", false, at, "model.");
  KS_CHECK(is_null_or_absent(json_, "normalizer"), at, "normalizer ", nn::json_excerpt(json_["normalizer"]),
           ": normalizers are not supported (GPT-2 and Llama-3 have none)");

  // Pre-tokenizer: ByteLevel, or Sequence[Split(regex, Isolated), ByteLevel(use_regex false)].
  KS_CHECK(json_.contains("pre_tokenizer") && json_["pre_tokenizer"].is_object(), at,
           "missing the \"pre_tokenizer\" object (byte-level BPE needs ByteLevel)");
  const json& pre = json_["pre_tokenizer"];
  auto byte_level = [&](const json& p, const std::string& name) {
    KS_CHECK(p.is_object() && text_or(p, "type", "", at, name + ".") == "ByteLevel", at, name,
             ": expected ByteLevel, got ", nn::json_excerpt(p));
    prefix_space_ = flag_or(p, "add_prefix_space", false, at, name + ".");
    return flag_or(p, "use_regex", true, at, name + ".");
  };
  if (text_or(pre, "type", "", at, "pre_tokenizer.") == "Sequence") {
    KS_CHECK(pre.contains("pretokenizers") && pre["pretokenizers"].is_array() && pre["pretokenizers"].size() == 2, at,
             "pre_tokenizer: a Sequence must be [Split, ByteLevel]");
    const json& split = pre["pretokenizers"][0];
    KS_CHECK(split.is_object() && text_or(split, "type", "", at, "pre_tokenizer.pretokenizers[0].") == "Split", at,
             "pre_tokenizer.pretokenizers[0]: expected Split, got ", nn::json_excerpt(split));
    KS_CHECK(text_or(split, "behavior", "", at, "pre_tokenizer.pretokenizers[0].") == "Isolated" &&
                 !flag_or(split, "invert", false, at, "pre_tokenizer.pretokenizers[0]."),
             at, "pre_tokenizer.pretokenizers[0]: only behavior \"Isolated\" without invert is supported");
    const json pat = is_null_or_absent(split, "pattern") ? json::object() : split.at("pattern");
    const std::string regex = pat.contains("Regex") && pat["Regex"].is_string() ? pat["Regex"].get<std::string>() : "";
    pattern_ = known_pattern(regex);
    KS_CHECK(pattern_.has_value(), at, "pre_tokenizer.pretokenizers[0].pattern ", nn::json_excerpt(pat),
             ": only GPT-2's and Llama-3's regexes are supported");
    KS_CHECK(!byte_level(pre["pretokenizers"][1], "pre_tokenizer.pretokenizers[1]"), at,
             "pre_tokenizer.pretokenizers[1]: ByteLevel after a Split must have use_regex false");
  } else if (byte_level(pre, "pre_tokenizer")) {
    pattern_ = SplitPattern::Gpt2;
  }
  if (!is_null_or_absent(json_, "decoder"))
    KS_CHECK(json_["decoder"].is_object() && text_or(json_["decoder"], "type", "", at, "decoder.") == "ByteLevel", at,
             "decoder ", nn::json_excerpt(json_["decoder"]), ": expected ByteLevel");

  // Vocabulary: text -> id, each text byte-level, each id once.
  KS_CHECK(model.contains("vocab") && model["vocab"].is_object(), at, "model.vocab must be an object {token: id}");
  KS_CHECK(model["vocab"].size() <= size_t(kMaxVocabSize), at, "model.vocab holds ", model["vocab"].size(),
           " entries, over the vocabulary limit of ", kMaxVocabSize);
  auto assign = [&](int64_t id, std::string bytes, const std::string& what) {
    KS_CHECK(id >= 0 && id < kMaxVocabSize, at, what, ": id ", id, " is outside [0, ", kMaxVocabSize, ")");
    if (size_t(id) >= bytes_.size()) {
      bytes_.resize(size_t(id) + 1);
      assigned_.resize(size_t(id) + 1, false);
    }
    KS_CHECK(!assigned_[size_t(id)], at, what, ": id ", id, " is given to two tokens");
    assigned_[size_t(id)] = true;
    bytes_[size_t(id)] = std::move(bytes);
  };
  for (const auto& [text, idj] : model["vocab"].items()) {
    KS_CHECK(idj.is_number_integer(), at, "model.vocab[\"", text, "\"]: the id must be an integer, got ",
             nn::json_excerpt(idj));
    auto bytes = to_bytes(text);
    KS_CHECK(bytes.has_value(), at, "model.vocab[\"", text, "\"] is not byte-level text (GPT-2's byte characters)");
    assign(idj.get<int64_t>(), std::move(*bytes), str("model.vocab[\"", text, "\"]"));
    vocab_[text] = idj.get<int64_t>();
  }
  for (int b = 0; b < 256; ++b) {
    auto it = vocab_.find(byte_chars()[size_t(b)]);
    KS_CHECK(it != vocab_.end(), at, "model.vocab has no token for byte ", b, " (\"", byte_chars()[size_t(b)],
             "\"): not a byte-level vocabulary");
    byte_id_[b] = it->second;
  }

  // Merges: "left right" strings or [left, right] pairs; rank = position.
  KS_CHECK(model.contains("merges") && model["merges"].is_array(), at, "model.merges must be a list");
  KS_CHECK(model["merges"].size() <= size_t(kMaxVocabSize), at, "model.merges holds ", model["merges"].size(),
           " entries, over the vocabulary limit of ", kMaxVocabSize);
  int64_t rank = 0;
  for (const json& m : model["merges"]) {
    std::string left, right;
    if (m.is_string()) {
      const std::string s = m.get<std::string>();
      const size_t sp = s.find(' ');
      KS_CHECK(sp != std::string::npos && sp > 0 && sp + 1 < s.size() && s.find(' ', sp + 1) == std::string::npos, at,
               "model.merges[", rank, "] \"", s, "\" must be two tokens separated by one space");
      left = s.substr(0, sp), right = s.substr(sp + 1);
    } else {
      KS_CHECK(m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string(), at, "model.merges[", rank,
               "] must be \"left right\" or [left, right], got ", nn::json_excerpt(m));
      left = m[0].get<std::string>(), right = m[1].get<std::string>();
    }
    auto l = vocab_.find(left), r = vocab_.find(right), lr = vocab_.find(left + right);
    KS_CHECK(l != vocab_.end() && r != vocab_.end() && lr != vocab_.end(), at, "model.merges[", rank, "] (\"", left,
             "\", \"", right, "\"): \"",
             l == vocab_.end()   ? left
             : r == vocab_.end() ? right
                                 : left + right,
             "\" is not in model.vocab");
    merges_.emplace(key(l->second, r->second), Merge{rank, lr->second});  // a repeat keeps the first rank
    ++rank;
  }

  // Added tokens: matched in the text before anything else.
  if (json_.contains("added_tokens")) {
    KS_CHECK(json_["added_tokens"].is_array(), at, "added_tokens must be a list");
    for (const json& a : json_["added_tokens"]) {
      const std::string what = str("added_tokens[", added_.size(), "]");
      KS_CHECK(a.is_object() && a.contains("id") && a["id"].is_number_integer() && a.contains("content") &&
                   a["content"].is_string() && !a["content"].get<std::string>().empty(),
               at, what, " needs an integer \"id\" and a non-empty \"content\", got ", nn::json_excerpt(a));
      for (const char* k : {"single_word", "lstrip", "rstrip"})
        KS_CHECK(!flag_or(a, k, false, at, what + "."), at, what, ".", k,
                 ": stripping or whole-word added tokens are not supported");
      const int64_t id = a["id"].get<int64_t>();
      const std::string content = a["content"].get<std::string>();
      auto in_vocab = vocab_.find(content);
      if (in_vocab != vocab_.end())
        KS_CHECK(in_vocab->second == id, at, what, " \"", content, "\" has id ", id, " but model.vocab gives it ",
                 in_vocab->second);
      else
        assign(id, content, what);
      added_.emplace_back(content, id);
    }
    std::stable_sort(added_.begin(), added_.end(),
                     [](const auto& x, const auto& y) { return x.first.size() > y.first.size(); });
  }
  KS_CHECK(!bytes_.empty(), at, "the vocabulary is empty");

  if (eos_id >= 0) {
    KS_CHECK(eos_id < vocab_size() && assigned_[size_t(eos_id)], at, "the end-of-text id ", eos_id,
             " is not a token of this tokenizer");
    eos_ = eos_id;
  } else {
    for (const char* name : {"<|endoftext|>", "<|end_of_text|>", "</s>"})
      if (int64_t id = id_of(name); id >= 0 && eos_ < 0) eos_ = id;
  }
}

int64_t HfBpeTokenizer::id_of(const std::string& text) const {
  for (const auto& [content, id] : added_)
    if (content == text) return id;
  auto it = vocab_.find(text);
  return it == vocab_.end() ? -1 : it->second;
}

void HfBpeTokenizer::encode_piece(std::string_view piece, std::vector<int64_t>& out) const {
  if (ignore_merges_) {
    std::string mapped;
    for (char ch : piece) mapped += byte_chars()[static_cast<unsigned char>(ch)];
    if (auto it = vocab_.find(mapped); it != vocab_.end()) {
      out.push_back(it->second);
      return;
    }
  }
  std::vector<int64_t> sym;
  sym.reserve(piece.size());
  for (char ch : piece) sym.push_back(byte_id_[static_cast<unsigned char>(ch)]);
  while (sym.size() > 1) {
    const Merge* best = nullptr;
    for (size_t k = 0; k + 1 < sym.size(); ++k) {
      auto it = merges_.find(key(sym[k], sym[k + 1]));
      if (it != merges_.end() && (!best || it->second.rank < best->rank)) best = &it->second;
    }
    if (!best) break;
    // Every occurrence of the best pair, left to right (GPT-2's encoder.py).
    size_t w = 0;
    for (size_t k = 0; k < sym.size(); ++k) {
      auto it = k + 1 < sym.size() ? merges_.find(key(sym[k], sym[k + 1])) : merges_.end();
      if (it != merges_.end() && it->second.rank == best->rank) {
        sym[w++] = best->id;
        ++k;
      } else {
        sym[w++] = sym[k];
      }
    }
    sym.resize(w);
  }
  out.insert(out.end(), sym.begin(), sym.end());
}

std::vector<int64_t> HfBpeTokenizer::encode(std::string_view text) const {
  std::vector<int64_t> ids;
  auto plain = [&](std::string_view part) {
    if (part.empty()) return;
    std::string with_space;
    if (prefix_space_ && part.front() != ' ') {
      with_space.reserve(part.size() + 1);
      with_space.push_back(' ');
      with_space.append(part);
      part = with_space;
    }
    if (!pattern_) return encode_piece(part, ids);
    for (std::string_view piece : split_by_pattern(part, *pattern_)) encode_piece(piece, ids);
  };
  size_t start = 0, i = 0;
  while (i < text.size()) {
    const std::pair<std::string, int64_t>* hit = nullptr;
    for (const auto& a : added_)  // longest first
      if (text.compare(i, a.first.size(), a.first) == 0) {
        hit = &a;
        break;
      }
    if (!hit) {
      ++i;
      continue;
    }
    plain(text.substr(start, i - start));
    ids.push_back(hit->second);
    i += hit->first.size();
    start = i;
  }
  plain(text.substr(start));
  return ids;
}

std::string HfBpeTokenizer::decode(const std::vector<int64_t>& ids) const {
  std::string out;
  for (int64_t id : ids) out += token(id);
  return out;
}

std::string HfBpeTokenizer::token(int64_t id) const {
  KS_CHECK(id >= 0 && id < vocab_size() && assigned_[size_t(id)], "tokenizer: id ", id,
           " is not a token of this hf_bpe tokenizer (", vocab_size(), " ids)");
  return bytes_[size_t(id)];
}

std::string HfBpeTokenizer::to_json() const {
  return detail::dump_tokenizer(json{{"type", "hf_bpe"}, {"eos_id", eos_}, {"tokenizer", json_}});
}

namespace detail {

std::unique_ptr<Tokenizer> hf_bpe_tokenizer_from_json(const json& j, const std::string& where) {
  if (!j.contains("type")) return std::make_unique<HfBpeTokenizer>(j, where);  // a raw tokenizer.json
  KS_CHECK(j.contains("tokenizer"), "load_tokenizer: ", where, ": missing field \"tokenizer\"");
  return std::make_unique<HfBpeTokenizer>(j.at("tokenizer"), where, field<int64_t>(j, "eos_id", where));
}

}  // namespace detail

}  // namespace ks::data
