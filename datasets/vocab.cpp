// datasets/vocab.cpp — the character- and word-level tokenizers, UTF-8
// decoding with escaped invalid bytes, and their JSON form.
#include "datasets/vocab.h"

#include <algorithm>
#include <cstdio>

#include "core/error.h"
#include "datasets/tokenizer_json.h"

namespace ks::data {

using detail::json;

namespace {

constexpr char32_t kEscapeBase = 0xDC00;  // invalid byte b -> U+DC00 + b (b >= 0x80)

bool is_space(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }
bool is_punct(unsigned char c) {
  return (c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) || (c >= 123 && c <= 126);
}
char lower(char c) { return c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c; }

std::string code_name(char32_t c) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "U+%04X", unsigned(c));
  return buf;
}

// The symbols seen at least min_freq times, most frequent first, ties by
// symbol, cut so that specials + symbols <= max_vocab (0: no cut).
template <class Sym, class Map>
std::vector<Sym> by_frequency(const Map& counts, int64_t min_freq, int64_t max_vocab, const char* who) {
  KS_CHECK(min_freq >= 1, who, ": min_freq must be >= 1, got ", min_freq);
  KS_CHECK(max_vocab == 0 || max_vocab > kNumSpecial, who, ": max_vocab must be 0 (no limit) or more than the ",
           kNumSpecial, " special tokens, got ", max_vocab);
  std::vector<std::pair<int64_t, Sym>> kept;
  for (const auto& [sym, n] : counts)
    if (n >= min_freq) kept.emplace_back(-n, sym);
  std::sort(kept.begin(), kept.end());
  if (max_vocab > 0 && int64_t(kept.size()) > max_vocab - kNumSpecial) kept.resize(size_t(max_vocab - kNumSpecial));
  std::vector<Sym> out;
  out.reserve(kept.size());
  for (auto& [n, sym] : kept) out.push_back(sym);
  return out;
}

void check_id(int64_t id, int64_t vocab, const char* type) {
  KS_CHECK(id >= 0 && id < vocab, "tokenizer decode: id ", id, " is out of range for a ", type, " tokenizer (", vocab,
           " ids)");
}

}  // namespace

// ---- UTF-8 -----------------------------------------------------------------------

namespace {

// The length of the valid UTF-8 character at s[i] (1 to 4), its code point in
// `cp`; 0 when the bytes there are not one.
size_t utf8_char(std::string_view s, size_t i, char32_t& cp) {
  const size_t n = s.size();
  unsigned char b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) {
    cp = b0;
    return 1;
  }
  int len = b0 >= 0xC2 && b0 <= 0xDF ? 2 : b0 >= 0xE0 && b0 <= 0xEF ? 3 : b0 >= 0xF0 && b0 <= 0xF4 ? 4 : 0;
  cp = len == 2 ? (b0 & 0x1F) : len == 3 ? (b0 & 0x0F) : (b0 & 0x07);
  bool ok = len > 0 && i + size_t(len) <= n;
  for (int k = 1; ok && k < len; ++k) {
    unsigned char b = static_cast<unsigned char>(s[i + size_t(k)]);
    ok = (b & 0xC0) == 0x80;
    cp = cp << 6 | (b & 0x3F);
  }
  // Overlong forms, UTF-16 surrogates and values past U+10FFFF are invalid.
  if (ok)
    ok = !(len == 3 && cp < 0x800) && !(len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) && !(cp >= 0xD800 && cp <= 0xDFFF);
  return ok ? size_t(len) : 0;
}

}  // namespace

std::vector<char32_t> utf8_decode(std::string_view s) {
  std::vector<char32_t> out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    char32_t cp;
    const size_t len = utf8_char(s, i, cp);
    out.push_back(len > 0 ? cp : kEscapeBase + static_cast<unsigned char>(s[i]));
    i += len > 0 ? len : 1;
  }
  return out;
}

bool is_utf8(std::string_view s) {
  char32_t cp;
  for (size_t i = 0, len; i < s.size(); i += len)
    if ((len = utf8_char(s, i, cp)) == 0) return false;
  return true;
}

void utf8_append(std::string& out, char32_t c) {
  if (c >= kEscapeBase + 0x80 && c <= kEscapeBase + 0xFF) {
    out.push_back(static_cast<char>(c - kEscapeBase));
  } else if (c < 0x80) {
    out.push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out.push_back(static_cast<char>(0xC0 | c >> 6));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | c >> 12));
    out.push_back(static_cast<char>(0x80 | (c >> 6 & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | c >> 18));
    out.push_back(static_cast<char>(0x80 | (c >> 12 & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c >> 6 & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

// ---- characters ------------------------------------------------------------------

CharTokenizer::CharTokenizer(std::vector<char32_t> chars) : chars_(std::move(chars)) {
  ascii_.fill(kUnkId);
  for (size_t i = 0; i < chars_.size(); ++i) {
    char32_t c = chars_[i];
    KS_CHECK(c <= 0x10FFFF, "char tokenizer: ", code_name(c), " is not a Unicode code point");
    KS_CHECK(ids_.emplace(c, kNumSpecial + int64_t(i)).second, "char tokenizer: character ", code_name(c),
             " appears twice");
    if (c < 128) ascii_[c] = kNumSpecial + int64_t(i);
  }
}

CharTokenizer CharTokenizer::build(const std::vector<std::string>& corpus, int64_t min_freq, int64_t max_vocab) {
  std::unordered_map<char32_t, int64_t> counts;
  for (const auto& text : corpus)
    for (char32_t c : utf8_decode(text)) ++counts[c];
  return CharTokenizer(by_frequency<char32_t>(counts, min_freq, max_vocab, "char tokenizer"));
}

CharTokenizer CharTokenizer::from_alphabet(std::string_view alphabet) {
  std::vector<char32_t> chars;
  for (char32_t c : utf8_decode(alphabet))
    if (std::find(chars.begin(), chars.end(), c) == chars.end()) chars.push_back(c);
  return CharTokenizer(std::move(chars));
}

int64_t CharTokenizer::id_of(char32_t c) const {
  if (c < 128) return ascii_[c];
  auto it = ids_.find(c);
  return it == ids_.end() ? kUnkId : it->second;
}

std::vector<int64_t> CharTokenizer::encode(std::string_view text) const {
  std::vector<int64_t> ids;
  ids.reserve(text.size());
  for (char32_t c : utf8_decode(text)) ids.push_back(id_of(c));
  return ids;
}

std::string CharTokenizer::decode(const std::vector<int64_t>& ids) const {
  std::string out;
  out.reserve(ids.size());
  for (int64_t id : ids) {
    check_id(id, vocab_size(), "char");
    if (id >= kNumSpecial)
      utf8_append(out, chars_[size_t(id - kNumSpecial)]);
    else if (id == kUnkId)
      out += special_tokens()[kUnkId];
  }
  return out;
}

std::string CharTokenizer::token(int64_t id) const {
  KS_CHECK(id >= 0 && id < vocab_size(), "tokenizer token: id ", id, " is out of range (", vocab_size(), " ids)");
  if (id < kNumSpecial) return special_tokens()[size_t(id)];
  std::string s;
  utf8_append(s, chars_[size_t(id - kNumSpecial)]);
  return s;
}

std::string CharTokenizer::to_json() const {
  json j = detail::tokenizer_head("char");
  std::vector<uint32_t> codes(chars_.begin(), chars_.end());
  j["chars"] = codes;
  return detail::dump_tokenizer(j);
}

// ---- words -----------------------------------------------------------------------

WordTokenizer::WordTokenizer(std::vector<std::string> words, WordOptions options)
    : words_(std::move(words)), options_(options) {
  for (size_t i = 0; i < words_.size(); ++i) {
    KS_CHECK(!words_[i].empty(), "word tokenizer: word ", kNumSpecial + int64_t(i), " is empty");
    KS_CHECK(ids_.emplace(words_[i], kNumSpecial + int64_t(i)).second, "word tokenizer: word \"", words_[i],
             "\" appears twice");
  }
}

std::vector<std::string> WordTokenizer::split(std::string_view text) const {
  std::vector<std::string> out;
  std::string cur;
  auto flush = [&] {
    if (!cur.empty()) out.push_back(std::move(cur));
    cur.clear();
  };
  for (char ch : text) {
    unsigned char c = static_cast<unsigned char>(ch);
    if (is_space(c)) {
      flush();
    } else if (options_.split_punctuation && is_punct(c)) {
      flush();
      out.emplace_back(1, ch);
    } else {
      cur.push_back(options_.lowercase ? lower(ch) : ch);
    }
  }
  flush();
  return out;
}

WordTokenizer WordTokenizer::build(const std::vector<std::string>& corpus, WordOptions options, int64_t min_freq,
                                   int64_t max_vocab) {
  WordTokenizer splitter({}, options);
  std::map<std::string, int64_t> counts;
  for (const auto& text : corpus)
    for (auto& w : splitter.split(text)) ++counts[w];
  return from_counts(counts, options, min_freq, max_vocab);
}

WordTokenizer WordTokenizer::from_counts(const std::map<std::string, int64_t>& counts, WordOptions options,
                                         int64_t min_freq, int64_t max_vocab) {
  std::map<std::string, int64_t> folded;
  for (const auto& [w, n] : counts) {
    if (w.empty()) continue;
    std::string key = w;
    if (options.lowercase) std::transform(key.begin(), key.end(), key.begin(), lower);
    folded[key] += n;
  }
  return WordTokenizer(by_frequency<std::string>(folded, min_freq, max_vocab, "word tokenizer"), options);
}

int64_t WordTokenizer::id(std::string word) const {
  if (options_.lowercase) std::transform(word.begin(), word.end(), word.begin(), lower);
  auto it = ids_.find(word);
  return it == ids_.end() ? kUnkId : it->second;
}

std::vector<int64_t> WordTokenizer::encode(std::string_view text) const {
  std::vector<int64_t> ids;
  for (auto& w : split(text)) {
    auto it = ids_.find(w);
    ids.push_back(it == ids_.end() ? kUnkId : it->second);
  }
  return ids;
}

std::string WordTokenizer::decode(const std::vector<int64_t>& ids) const {
  std::string out;
  for (int64_t id : ids) {
    check_id(id, vocab_size(), "word");
    if (id != kUnkId && id < kNumSpecial) continue;
    if (!out.empty()) out.push_back(' ');
    out += id == kUnkId ? special_tokens()[kUnkId] : words_[size_t(id - kNumSpecial)];
  }
  return out;
}

std::string WordTokenizer::token(int64_t id) const {
  KS_CHECK(id >= 0 && id < vocab_size(), "tokenizer token: id ", id, " is out of range (", vocab_size(), " ids)");
  return id < kNumSpecial ? special_tokens()[size_t(id)] : words_[size_t(id - kNumSpecial)];
}

std::string WordTokenizer::to_json() const {
  json j = detail::tokenizer_head("word");
  j["lowercase"] = options_.lowercase;
  j["split_punctuation"] = options_.split_punctuation;
  // JSON text holds only UTF-8; a word of other bytes (a Latin-1 file read as
  // bytes) is written as {"bytes": [...]}, so every vocabulary can be saved.
  json words = json::array();
  for (const std::string& w : words_) {
    try {
      (void)json(w).dump();
      words.push_back(w);
    } catch (const json::exception&) {
      words.push_back({{"bytes", std::vector<uint8_t>(w.begin(), w.end())}});
    }
  }
  j["words"] = std::move(words);
  return detail::dump_tokenizer(j);
}

// ---- loading ---------------------------------------------------------------------

namespace detail {

CharTokenizer char_tokenizer_from_json(const json& j, const std::string& where) {
  std::vector<char32_t> chars;
  for (const json& c : entries(j, "chars", where)) {
    // Checked before get: converting 5e71 to an integer is undefined behaviour.
    KS_CHECK(c.is_number_integer() && c.get<int64_t>() >= 0 && c.get<int64_t>() <= 0x10FFFF, "load_tokenizer: ", where,
             ": \"chars\" holds ", nn::json_excerpt(c), ", which is not a Unicode code point");
    chars.push_back(char32_t(c.get<int64_t>()));
  }
  try {
    return CharTokenizer(std::move(chars));
  } catch (const Error& e) {
    throw Error(str("load_tokenizer: ", where, ": ", e.what()));
  }
}

WordTokenizer word_tokenizer_from_json(const json& j, const std::string& where) {
  WordOptions o{.lowercase = field<bool>(j, "lowercase", where),
                .split_punctuation = field<bool>(j, "split_punctuation", where)};
  const json& list = entries(j, "words", where);
  std::vector<std::string> words;
  for (const json& w : list) {
    if (w.is_string()) {
      words.push_back(w.get<std::string>());
      continue;
    }
    KS_CHECK(w.is_object() && w.contains("bytes") && w["bytes"].is_array(), "load_tokenizer: ", where,
             ": a word must be a string or {\"bytes\": [...]}");
    std::string bytes;
    for (const json& b : w["bytes"]) {
      KS_CHECK(b.is_number_unsigned() && b.get<uint64_t>() < 256, "load_tokenizer: ", where,
               ": a word's \"bytes\" must be numbers 0..255");
      bytes.push_back(char(b.get<uint64_t>()));
    }
    words.push_back(std::move(bytes));
  }
  try {
    return WordTokenizer(std::move(words), o);
  } catch (const Error& e) {
    throw Error(str("load_tokenizer: ", where, ": ", e.what()));
  }
}

}  // namespace detail

}  // namespace ks::data
