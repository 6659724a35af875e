// datasets/hf_form.cpp — the Hugging Face tokenizer.json forms of the byte,
// char, word and bpe tokenizers (Tokenizer::hf_json, hf_refusal), and their
// recognition (datasets/hf_form.h). Not here: reading other tokenizer.json
// files (datasets/hf_bpe.h).
#include "datasets/hf_form.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <map>
#include <optional>

#include "core/error.h"
#include "datasets/bpe.h"
#include "datasets/hf_bpe.h"
#include "datasets/vocab.h"

namespace ks::data {

using json = nlohmann::json;

// Oniguruma (tokenizers) and JavaScript (tokenizers.js) both read it; the
// classes are ASCII-only on purpose: Keystone classifies bytes, and every
// byte of a non-ASCII character is a "letter" to it.
const char* const kBpeSplitRegex =
    " ?[^\\x00-@\\[-`{-\\x7F]+| ?[0-9]+| ?[\\x00-\\x08\\x0E-\\x1F!-/:-@\\[-`{-\\x7F]+"
    "|[\\x09-\\x0D ]+(?= [^\\x09-\\x0D ])|[\\x09-\\x0D ]+";

namespace {

// The words of the word form: runs of anything but ASCII whitespace (and,
// split, ASCII punctuation), or one punctuation mark; Keystone's is_space and
// is_punct (datasets/vocab.cpp).
constexpr const char* kWordRegex = "[^\\x09-\\x0D !-/:-@\\[-`{-~]+|[!-/:-@\\[-`{-~]";
constexpr const char* kWordRegexNoPunct = "[^\\x09-\\x0D ]+";

json specials_vocab() {
  json v = json::object();
  for (int64_t id = 0; id < kNumSpecial; ++id) v[special_tokens()[size_t(id)]] = id;
  return v;
}

json bpe_model(json vocab, json merges, json unk) {
  return {{"type", "BPE"},
          {"dropout", nullptr},
          {"unk_token", std::move(unk)},
          {"continuing_subword_prefix", nullptr},
          {"end_of_word_suffix", nullptr},
          {"fuse_unk", false},
          {"byte_fallback", false},
          {"ignore_merges", false},
          {"vocab", std::move(vocab)},
          {"merges", std::move(merges)}};
}

json byte_level_step(bool use_regex) {
  return {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", use_regex}};
}

json split_step(const char* regex, bool invert, const char* behavior) {
  return {{"type", "Split"}, {"pattern", {{"Regex", regex}}}, {"behavior", behavior}, {"invert", invert}};
}

json tokenizer_file(json model, json normalizer, json pre, json decoder) {
  return {{"version", "1.0"},
          {"truncation", nullptr},
          {"padding", nullptr},
          {"added_tokens", json::array()},
          {"normalizer", std::move(normalizer)},
          {"pre_tokenizer", std::move(pre)},
          {"post_processor", nullptr},
          {"decoder", std::move(decoder)},
          {"model", std::move(model)}};
}

std::string hex_byte(unsigned char b) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%02X", unsigned(b));
  return buf;
}

// Adds key -> id, refusing a key that another id holds already.
void add_entry(json& vocab, const std::string& key, int64_t id, const char* type) {
  KS_CHECK(!vocab.contains(key), "hf tokenizer: the ", type, " tokenizer's ids ", vocab[key].get<int64_t>(), " and ",
           id, " are both \"", key, "\"; a tokenizer.json vocabulary holds one id per token");
  vocab[key] = id;
}

// The ids 4.. of a vocabulary read back, in id order; none if they are not 4, 5, ... without gaps.
std::optional<std::vector<std::string>> entries_from(const json& vocab) {
  if (!vocab.is_object() || vocab.size() < size_t(kNumSpecial)) return std::nullopt;
  std::vector<std::string> by_id(vocab.size());
  for (const auto& [key, id] : vocab.items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= int64_t(by_id.size()))
      return std::nullopt;
    by_id[size_t(id.get<int64_t>())] = key;
  }
  for (int64_t i = 0; i < kNumSpecial; ++i)
    if (by_id[size_t(i)] != special_tokens()[size_t(i)]) return std::nullopt;
  by_id.erase(by_id.begin(), by_id.begin() + kNumSpecial);
  return by_id;
}

}  // namespace

// ---- the default: no form ---------------------------------------------------------

std::string Tokenizer::hf_refusal() const {
  return str("the ", type(), " tokenizer has no exact Hugging Face tokenizer.json form");
}

json Tokenizer::hf_json() const {
  const std::string why = hf_refusal();
  KS_CHECK(why.empty(), "hf tokenizer: ", why);
  throw Error(str("hf tokenizer: the ", type(), " tokenizer gives no tokenizer.json"));
}

// ---- byte ---------------------------------------------------------------------------

std::string ByteTokenizer::hf_refusal() const { return ""; }

json ByteTokenizer::hf_json() const {
  json vocab = specials_vocab();
  for (int b = 0; b < 256; ++b) add_entry(vocab, gpt2_byte_chars()[size_t(b)], kNumSpecial + b, "byte");
  return tokenizer_file(bpe_model(std::move(vocab), json::array(), nullptr), nullptr, byte_level_step(false),
                        byte_level_step(true));
}

// ---- bpe ----------------------------------------------------------------------------

std::string BpeTokenizer::hf_refusal() const {
  std::map<std::string_view, int64_t> seen;
  for (int64_t id = kNumSpecial; id < vocab_size(); ++id) {
    auto [it, fresh] = seen.emplace(bytes_[size_t(id)], id);
    if (!fresh)
      return str("the bpe tokenizer's ids ", it->second, " and ", id, " stand for the same bytes (\"",
                 byte_level_text(bytes_[size_t(id)]),
                 "\"); a tokenizer.json vocabulary holds one id per token, so it has no exact Hugging Face form");
  }
  return "";
}

json BpeTokenizer::hf_json() const {
  const std::string why = hf_refusal();
  KS_CHECK(why.empty(), "hf tokenizer: ", why);
  json vocab = specials_vocab();
  for (int64_t id = kNumSpecial; id < vocab_size(); ++id)
    add_entry(vocab, byte_level_text(bytes_[size_t(id)]), id, "bpe");
  json merges = json::array();
  for (auto [a, b] : merges_)
    merges.push_back(byte_level_text(bytes_[size_t(a)]) + " " + byte_level_text(bytes_[size_t(b)]));
  json pre = {{"type", "Sequence"},
              {"pretokenizers", {split_step(kBpeSplitRegex, false, "Isolated"), byte_level_step(false)}}};
  return tokenizer_file(bpe_model(std::move(vocab), std::move(merges), nullptr), nullptr, std::move(pre),
                        byte_level_step(true));
}

// ---- char ---------------------------------------------------------------------------

std::string CharTokenizer::hf_refusal() const {
  for (size_t i = 0; i < chars_.size(); ++i) {
    const char32_t c = chars_[i];
    if (c >= 0xDC80 && c <= 0xDCFF)
      return str("the char tokenizer's id ", kNumSpecial + int64_t(i), " is the invalid UTF-8 byte ",
                 hex_byte(static_cast<unsigned char>(c - 0xDC00)),
                 " (its corpus was not UTF-8); a tokenizer.json holds Unicode text only, so it has no exact Hugging "
                 "Face form");
    if (c >= 0xD800 && c <= 0xDFFF)
      return str("the char tokenizer's id ", kNumSpecial + int64_t(i), " is a UTF-16 surrogate (code point ",
                 unsigned(c), "), which no Unicode text holds; it has no exact Hugging Face form");
  }
  return "";
}

json CharTokenizer::hf_json() const {
  const std::string why = hf_refusal();
  KS_CHECK(why.empty(), "hf tokenizer: ", why);
  json vocab = specials_vocab();
  for (size_t i = 0; i < chars_.size(); ++i)
    add_entry(vocab, token(kNumSpecial + int64_t(i)), kNumSpecial + int64_t(i), "char");
  return tokenizer_file(bpe_model(std::move(vocab), json::array(), special_tokens()[kUnkId]), nullptr, nullptr,
                        json{{"type", "Fuse"}});
}

// ---- word ---------------------------------------------------------------------------

std::string WordTokenizer::hf_refusal() const {
  for (size_t i = 0; i < words_.size(); ++i) {
    const int64_t id = kNumSpecial + int64_t(i);
    if (!is_utf8(words_[i]))
      return str("the word tokenizer's id ", id,
                 " is a word that is not UTF-8 (its corpus was not UTF-8); a tokenizer.json holds Unicode text only, "
                 "so it has no exact Hugging Face form");
    for (int64_t s = 0; s < kNumSpecial; ++s)
      if (words_[i] == special_tokens()[size_t(s)])
        return str("the word tokenizer's id ", id, " is the word \"", words_[i], "\", the name of special id ", s,
                   "; a tokenizer.json vocabulary holds one id per token, so it has no exact Hugging Face form");
  }
  return "";
}

json WordTokenizer::hf_json() const {
  const std::string why = hf_refusal();
  KS_CHECK(why.empty(), "hf tokenizer: ", why);
  json vocab = specials_vocab();
  for (size_t i = 0; i < words_.size(); ++i) add_entry(vocab, words_[i], kNumSpecial + int64_t(i), "word");
  json normalizer = nullptr;
  if (options_.lowercase) {
    json steps = json::array();
    for (char c = 'A'; c <= 'Z'; ++c)
      steps.push_back({{"type", "Replace"},
                       {"pattern", {{"String", std::string(1, c)}}},
                       {"content", std::string(1, char(c - 'A' + 'a'))}});
    normalizer = {{"type", "Sequence"}, {"normalizers", std::move(steps)}};
  }
  // WordPiece, not WordLevel (which tokenizers.js does not implement): with a subword prefix no
  // word can start with (a space), a word outside the vocabulary has no pieces and is <unk>,
  // as WordLevel would make it; no word is longer than the longest in the vocabulary.
  int64_t longest = 1;
  for (const std::string& w : words_) longest = std::max(longest, int64_t(utf8_decode(w).size()));
  json model = {{"type", "WordPiece"},
                {"unk_token", special_tokens()[kUnkId]},
                {"continuing_subword_prefix", " "},
                {"max_input_chars_per_word", longest},
                {"vocab", std::move(vocab)}};
  return tokenizer_file(std::move(model), std::move(normalizer),
                        split_step(options_.split_punctuation ? kWordRegex : kWordRegexNoPunct, true, "Removed"),
                        json{{"type", "WordPiece"}, {"prefix", " "}, {"cleanup", false}});
}

// ---- recognition --------------------------------------------------------------------

namespace {

// Each candidate is built from the file's vocabulary (and merges) and kept
// only where its own form is the file, so nothing about the file is guessed.
std::unique_ptr<Tokenizer> candidate(const json& tj) {
  const json& model = tj.at("model");
  const std::string type = model.value("type", "");
  const std::optional<std::vector<std::string>> entries = entries_from(model.value("vocab", json()));
  if (!entries) return nullptr;
  if (type == "WordPiece") {
    const json& pre = tj.value("pre_tokenizer", json());
    const bool punct = pre.is_object() && pre.value("pattern", json()).value("Regex", "") == kWordRegex;
    return std::make_unique<WordTokenizer>(
        *entries, WordOptions{.lowercase = !tj.value("normalizer", json()).is_null(), .split_punctuation = punct});
  }
  if (type != "BPE" || !model.contains("merges") || !model.at("merges").is_array()) return nullptr;
  const json& merges = model.at("merges");
  if (tj.value("pre_tokenizer", json()).is_null()) {  // char: one code point per entry
    std::vector<char32_t> chars;
    for (const std::string& e : *entries) {
      const std::vector<char32_t> c = utf8_decode(e);
      if (c.size() != 1) return nullptr;
      chars.push_back(c[0]);
    }
    return std::make_unique<CharTokenizer>(std::move(chars));
  }
  if (merges.empty() && entries->size() == 256) return std::make_unique<ByteTokenizer>();
  std::map<std::string, int64_t> ids;
  for (size_t i = 0; i < entries->size(); ++i) ids[(*entries)[i]] = kNumSpecial + int64_t(i);
  std::vector<std::pair<int64_t, int64_t>> pairs;
  for (const json& m : merges) {
    if (!m.is_string()) return nullptr;
    const std::string s = m.get<std::string>();
    const size_t space = s.find(' ');
    if (space == std::string::npos) return nullptr;
    auto a = ids.find(s.substr(0, space)), b = ids.find(s.substr(space + 1));
    if (a == ids.end() || b == ids.end()) return nullptr;
    pairs.emplace_back(a->second, b->second);
  }
  return std::make_unique<BpeTokenizer>(std::move(pairs));
}

}  // namespace

std::unique_ptr<Tokenizer> keystone_tokenizer_from_hf(const json& tj) {
  if (!tj.is_object() || !tj.contains("model") || !tj.at("model").is_object()) return nullptr;
  try {
    std::unique_ptr<Tokenizer> t = candidate(tj);
    if (t && t->hf_refusal().empty() && t->hf_json() == tj) return t;
  } catch (const std::exception&) {  // a vocabulary no Keystone tokenizer takes: not one of its forms
  }
  return nullptr;
}

}  // namespace ks::data
