// datasets/hf_bpe.cpp — reading a tokenizer.json's BPE, byte-level or
// SentencePiece-style (as a stream, or from a parsed tree), encoding by merge
// rank after the added tokens, decoding, and writing the file back from the
// tables.
#include "datasets/hf_bpe.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <functional>
#include <queue>
#include <tuple>
#include <unordered_set>
#include <utility>

#include "core/error.h"
#include "core/utf8.h"
#include "datasets/tokenizer_json.h"
#include "datasets/unicode_classes.h"

namespace ks::data {

// GPT-2's bytes_to_unicode: the printable bytes ! .. ~, ¡ .. ¬ and ® .. ÿ stand for
// themselves; the other 68 take U+0100 upwards in byte order.
const std::array<std::string, 256>& gpt2_byte_chars() {
  static const std::array<std::string, 256> table = [] {
    std::array<std::string, 256> t;
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      append_utf8(t[size_t(b)], printable ? char32_t(b) : next++);
    }
    return t;
  }();
  return table;
}

// Bytes as byte-level text (the inverse of to_bytes): hf_bpe.h.
std::string byte_level_text(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (char ch : bytes) out += gpt2_byte_chars()[static_cast<unsigned char>(ch)];
  return out;
}

using detail::json;
using hf::char_length;
using hf::flag_or;
using hf::is_null_or_absent;
using hf::kMetaspace;
using hf::plain_message;
using hf::replaced;
using hf::text_or;

namespace {

// Byte-level text (a vocabulary entry) back to bytes; nullopt when a
// character is not one of the 256 (each is U+0021..U+0143, one or two bytes
// of UTF-8, in its shortest form).
std::optional<std::string> to_bytes(std::string_view token) {
  static const std::array<int16_t, 0x144> byte_of = [] {  // code point -> the byte it stands for, or -1
    std::array<int16_t, 0x144> t;
    t.fill(-1);
    for (int b = 0; b < 256; ++b) t[size_t(unicode::decode_utf8(gpt2_byte_chars()[size_t(b)])[0].c)] = int16_t(b);
    return t;
  }();
  std::string out;
  out.reserve(token.size());
  for (size_t i = 0; i < token.size();) {
    const auto c0 = static_cast<unsigned char>(token[i]);
    uint32_t cp = c0;
    if (c0 >= 0x80) {
      const auto c1 = i + 1 < token.size() ? static_cast<unsigned char>(token[i + 1]) : 0u;
      if ((c0 & 0xE0) != 0xC0 || (c1 & 0xC0) != 0x80) return std::nullopt;
      cp = uint32_t(c0 & 0x1F) << 6 | (c1 & 0x3F);
      if (cp < 0x80) return std::nullopt;  // an overlong form
      ++i;
    }
    ++i;
    if (cp >= byte_of.size() || byte_of[cp] < 0) return std::nullopt;
    out += char(byte_of[cp]);
  }
  return out;
}

uint64_t key(int64_t a, int64_t b) { return uint64_t(a) << 32 | uint64_t(b); }

}  // namespace

// ---- loading -------------------------------------------------------------------

json& HfBpeTokenizer::read_settings(json tokenizer, const std::string& at) {
  settings_ = std::move(tokenizer);
  const json& tj = settings_;  // const: a lookup must not add a key that export would write back
  KS_CHECK(tj.is_object(), at, "a tokenizer.json must be a JSON object");
  KS_CHECK(tj.contains("model") && tj.at("model").is_object(), at, "missing the \"model\" object");
  const json& model = tj.at("model");
  const std::string mtype = text_or(model, "type", "BPE", at, "model.");
  KS_CHECK(mtype == "BPE", at, "model.type \"", mtype, "\": only BPE is supported");
  byte_fallback_ = flag_or(model, "byte_fallback", false, at, "model.");
  fuse_unk_ = flag_or(model, "fuse_unk", false, at, "model.");
  for (const char* k : {"continuing_subword_prefix", "end_of_word_suffix"})
    KS_CHECK(is_null_or_absent(model, k) || model.at(k) == "", at, "model.", k,
             " is not supported (neither byte-level nor SentencePiece-style BPE has one)");
  KS_CHECK(is_null_or_absent(model, "dropout") || model.at("dropout") == 0, at,
           "model.dropout: BPE dropout is not supported");
  ignore_merges_ = flag_or(model, "ignore_merges", false, at, "model.");
  text_or(model, "unk_token", "", at, "model.");  // its type; its id once the vocabulary is read
  const json no_pre = nullptr;
  const json& pre = tj.contains("pre_tokenizer") ? tj.at("pre_tokenizer") : no_pre;
  const std::string pre_type = pre.is_object() ? text_or(pre, "type", "", at, "pre_tokenizer.") : "";
  sp_ = byte_fallback_ || pre_type == "Metaspace";
  if (!is_null_or_absent(tj, "normalizer")) {
    const json& n = tj.at("normalizer");
    KS_CHECK(sp_, at, "normalizer ", nn::json_excerpt(n),
             ": a byte-level BPE takes no normalizer (GPT-2 and Llama-3 have none)");
    read_normalizers(n, "normalizer", at);
  }
  if (sp_) {
    read_sp_settings(pre, at);
    return settings_;
  }

  // Pre-tokenizer: ByteLevel, or Sequence[Split(regex, Isolated), ByteLevel(use_regex false)].
  KS_CHECK(pre.is_object(), at, "missing the \"pre_tokenizer\" object (byte-level BPE needs ByteLevel)");
  auto byte_level_pre = [&](const json& p, const std::string& name) {
    KS_CHECK(p.is_object() && text_or(p, "type", "", at, name + ".") == "ByteLevel", at, name,
             ": expected ByteLevel, got ", nn::json_excerpt(p));
    prefix_space_ = flag_or(p, "add_prefix_space", false, at, name + ".");
    return flag_or(p, "use_regex", true, at, name + ".");
  };
  if (text_or(pre, "type", "", at, "pre_tokenizer.") == "Sequence") {
    KS_CHECK(pre.contains("pretokenizers") && pre.at("pretokenizers").is_array() && pre.at("pretokenizers").size() == 2,
             at, "pre_tokenizer: a Sequence must be [Split, ByteLevel]");
    const json& split = pre.at("pretokenizers")[0];
    KS_CHECK(split.is_object() && text_or(split, "type", "", at, "pre_tokenizer.pretokenizers[0].") == "Split", at,
             "pre_tokenizer.pretokenizers[0]: expected Split, got ", nn::json_excerpt(split));
    KS_CHECK(text_or(split, "behavior", "", at, "pre_tokenizer.pretokenizers[0].") == "Isolated" &&
                 !flag_or(split, "invert", false, at, "pre_tokenizer.pretokenizers[0]."),
             at, "pre_tokenizer.pretokenizers[0]: only behavior \"Isolated\" without invert is supported");
    const json pat = is_null_or_absent(split, "pattern") ? json::object() : split.at("pattern");
    const std::string regex =
        pat.contains("Regex") && pat.at("Regex").is_string() ? pat.at("Regex").get<std::string>() : "";
    pattern_ = known_pattern(regex);
    KS_CHECK(pattern_.has_value(), at, "pre_tokenizer.pretokenizers[0].pattern ", nn::json_excerpt(pat),
             ": only GPT-2's, Llama-3's and Qwen2's regexes are supported");
    KS_CHECK(!byte_level_pre(pre.at("pretokenizers")[1], "pre_tokenizer.pretokenizers[1]"), at,
             "pre_tokenizer.pretokenizers[1]: ByteLevel after a Split must have use_regex false");
  } else if (byte_level_pre(pre, "pre_tokenizer")) {
    pattern_ = SplitPattern::Gpt2;
  }
  if (!is_null_or_absent(tj, "decoder"))
    KS_CHECK(tj.at("decoder").is_object() && text_or(tj.at("decoder"), "type", "", at, "decoder.") == "ByteLevel", at,
             "decoder ", nn::json_excerpt(tj.at("decoder")), ": expected ByteLevel");
  check_tables(at);
  return settings_;
}

void HfBpeTokenizer::check_tables(const std::string& at) const {
  const json& tj = settings_;
  const json& model = tj.at("model");
  KS_CHECK(model.contains("vocab") && model.at("vocab").is_object(), at, "model.vocab must be an object {token: id}");
  KS_CHECK(model.contains("merges") && model.at("merges").is_array(), at, "model.merges must be a list");
  if (tj.contains("added_tokens")) KS_CHECK(tj.at("added_tokens").is_array(), at, "added_tokens must be a list");
}

// Prepend {"prepend": "▁"} and Replace {"pattern": {"String": " "}, "content": "▁"}, alone or in a
// Sequence, as Llama 2's tokenizer.json normalizes; applied in the file's order.
void HfBpeTokenizer::read_normalizers(const json& n, const std::string& name, const std::string& at) {
  KS_CHECK(n.is_object(), at, name, ": expected an object, got ", nn::json_excerpt(n));
  const std::string type = text_or(n, "type", "", at, name + ".");
  if (type == "Sequence") {
    KS_CHECK(n.contains("normalizers") && n.at("normalizers").is_array(), at, name, ".normalizers must be a list");
    for (size_t i = 0; i < n.at("normalizers").size(); ++i)
      read_normalizers(n.at("normalizers")[i], str(name, ".normalizers[", i, "]"), at);
  } else if (type == "Prepend") {
    normalizers_.emplace_back(0, text_or(n, "prepend", "", at, name + "."));
    normalize_prepend_ = true;
  } else if (type == "Replace") {
    const json pat = n.contains("pattern") && n.at("pattern").is_object() ? n.at("pattern") : json::object();
    KS_CHECK(pat.contains("String") && pat.at("String") == " ", at, name, ".pattern ", nn::json_excerpt(pat),
             ": only Replace of {\"String\": \" \"} is supported");
    normalizers_.emplace_back(1, text_or(n, "content", "", at, name + "."));
  } else {
    throw Error(str(at, name, " ", nn::json_excerpt(n),
                    ": only Prepend and Replace normalizers (SentencePiece-style, as Llama 2's) are supported"));
  }
}

// SentencePiece-style: a Metaspace pre-tokenizer or none; a Metaspace decoder or
// Sequence[Replace "▁" -> " ", ByteFallback, Fuse, Strip " " (start 1)].
void HfBpeTokenizer::read_sp_settings(const json& pre, const std::string& at) {
  const json& tj = settings_;
  if (pre.is_object() && text_or(pre, "type", "", at, "pre_tokenizer.") == "Metaspace") {
    meta_ = hf::read_metaspace(pre, "pre_tokenizer", at);
    metaspace_ = true;
  } else {
    KS_CHECK(pre.is_null(), at, "pre_tokenizer ", nn::json_excerpt(pre),
             ": a SentencePiece-style BPE (model.byte_fallback, or a Metaspace pre-tokenizer) takes a Metaspace "
             "pre-tokenizer or none");
  }
  if (!is_null_or_absent(tj, "decoder")) {
    const hf::SpDecoder d = hf::read_sp_decoder(tj.at("decoder"), at);
    strip_first_space_ = d.strip_first_space;
    decode_bytes_ = d.decode_bytes;
  }
  check_tables(at);
}

template <class What>
void HfBpeTokenizer::assign(int64_t id, std::string bytes, const std::string& at, const What& what) {
  KS_CHECK(id >= 0 && id < kMaxVocabSize, at, what(), ": id ", id, " is outside [0, ", kMaxVocabSize, ")");
  if (size_t(id) >= bytes_.size()) {
    bytes_.resize(size_t(id) + 1);
    assigned_.resize(size_t(id) + 1, false);
    in_vocab_.resize(size_t(id) + 1, false);
  }
  KS_CHECK(!assigned_[size_t(id)], at, what(), ": id ", id, " is given to two tokens");
  assigned_[size_t(id)] = true;
  bytes_[size_t(id)] = std::move(bytes);
}

// Vocabulary: text -> id, each text once, each id once. The texts are kept as
// the file gives them (the settings, which say what they are, may come after
// the vocabulary in a stream); check_bytes makes byte-level ones bytes.
void HfBpeTokenizer::add_vocab(const std::string& text, const json& idj, const std::string& at) {
  KS_CHECK(vocab_count_ < size_t(kMaxVocabSize), at, "model.vocab holds more entries than the vocabulary limit of ",
           kMaxVocabSize);
  KS_CHECK(idj.is_number_integer(), at, "model.vocab[\"", text, "\"]: the id must be an integer, got ",
           nn::json_excerpt(idj));
  KS_CHECK(vocab_find(text) < 0, at, "model.vocab[\"", text, "\"] appears twice");
  const int64_t id = idj.get<int64_t>();
  assign(id, text, at, [&] { return str("model.vocab[\"", text, "\"]"); });
  in_vocab_[size_t(id)] = true;
  vocab_insert(id);
}

void HfBpeTokenizer::check_bytes(const std::string& at) {
  if (sp_) {
    byte_of_id_.assign(bytes_.size(), -1);
    for (int b = 0; b < 256; ++b) {
      char name[8];
      std::snprintf(name, sizeof name, "<0x%02X>", b);
      byte_id_[b] = vocab_find(name);
      if (byte_id_[b] >= 0) byte_of_id_[size_t(byte_id_[b])] = int16_t(b);
    }
    return;
  }
  // Byte-level: each entry's text to its bytes, and the index over those.
  vocab_index_.clear();
  vocab_count_ = 0;
  for (size_t id = 0; id < bytes_.size(); ++id) {
    if (!in_vocab_[id]) continue;
    std::optional<std::string> bytes = to_bytes(bytes_[id]);
    KS_CHECK(bytes.has_value(), at, "model.vocab[\"", bytes_[id],
             "\"] is not byte-level text (GPT-2's byte characters)");
    bytes_[id] = std::move(*bytes);
  }
  for (size_t id = 0; id < bytes_.size(); ++id) {
    if (!in_vocab_[id]) continue;
    KS_CHECK(vocab_find(bytes_[id]) < 0, at, "model.vocab[\"", byte_level_text(bytes_[id]), "\"] appears twice");
    vocab_insert(int64_t(id));
  }
  texts_are_bytes_ = true;
  for (int b = 0; b < 256; ++b) {
    const int64_t id = vocab_find(std::string(1, char(b)));
    KS_CHECK(id >= 0, at, "model.vocab has no token for byte ", b, " (\"", gpt2_byte_chars()[size_t(b)],
             "\"): not a byte-level vocabulary");
    byte_id_[b] = id;
  }
}

// Merges: "left right" strings or [left, right] pairs; rank = position.
void HfBpeTokenizer::add_merge(size_t rank, const json& m, const std::string& at) {
  KS_CHECK(rank < size_t(kMaxVocabSize), at, "model.merges holds more entries than the vocabulary limit of ",
           kMaxVocabSize);
  std::string_view left, right;
  const bool pair = !m.is_string();
  if (!pair) {
    const std::string& s = m.get_ref<const std::string&>();
    const size_t sp = s.find(' ');
    KS_CHECK(sp != std::string::npos && sp > 0 && sp + 1 < s.size() && s.find(' ', sp + 1) == std::string::npos, at,
             "model.merges[", rank, "] \"", s, "\" must be two tokens separated by one space");
    left = std::string_view(s).substr(0, sp), right = std::string_view(s).substr(sp + 1);
  } else {
    KS_CHECK(m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string(), at, "model.merges[", rank,
             "] must be \"left right\" or [left, right], got ", nn::json_excerpt(m));
    left = m[0].get_ref<const std::string&>(), right = m[1].get_ref<const std::string&>();
  }
  // The vocabulary's texts as the file gives them (check_bytes has not run yet).
  const int64_t l = vocab_find(left), r = vocab_find(right);
  const int64_t lr = l >= 0 && r >= 0 ? vocab_find(str(left, right)) : -1;
  KS_CHECK(lr >= 0, at, "model.merges[", rank, "] (\"", left, "\", \"", right, "\"): \"",
           l < 0   ? std::string(left)
           : r < 0 ? std::string(right)
                   : str(left, right),
           "\" is not in model.vocab");
  merges_.emplace(key(l, r), Merge{int64_t(rank), lr});  // a repeat keeps the first rank
  merge_list_.push_back(key(l, r));
  merge_is_pair_.push_back(pair);
}

void HfBpeTokenizer::finish(const std::string& at, int64_t eos_id) {
  check_bytes(at);
  for (size_t i = 0; i < added_.list().size(); ++i) {
    const hf::AddedTokens::Added& a = added_.list()[i];
    const std::optional<std::string> bytes = key_of(a.content);
    const int64_t in_vocab = bytes ? vocab_find(*bytes) : -1;
    if (in_vocab >= 0)
      KS_CHECK(in_vocab == a.id, at, "added_tokens[", i, "] \"", a.content, "\" has id ", a.id,
               " but model.vocab gives it ", in_vocab);
    else
      assign(a.id, a.content, at, [&] { return str("added_tokens[", i, "]"); });
  }
  added_.build();
  KS_CHECK(!bytes_.empty(), at, "the vocabulary is empty");
  if (sp_) byte_of_id_.resize(bytes_.size(), -1);
  if (const std::string unk = text_or(settings_.at("model"), "unk_token", "", at, "model."); !unk.empty()) {
    unk_ = id_of(unk);
    KS_CHECK(unk_ >= 0, at, "model.unk_token \"", unk, "\" is not a token of this tokenizer");
  }

  if (eos_id >= 0) {
    KS_CHECK(eos_id < vocab_size() && assigned_[size_t(eos_id)], at, "the end-of-text id ", eos_id,
             " is not a token of this tokenizer");
    eos_ = eos_id;
  } else {
    for (const char* name : hf::kEosNames)
      if (int64_t id = id_of(name); id >= 0 && eos_ < 0) eos_ = id;
  }
}

// vocab_index_: slots of (the hash's high 32 bits << 32 | id + 1), 0 empty,
// linear probing, at most half full; the hash bits spare most probes a look
// at the token's bytes.
int64_t HfBpeTokenizer::vocab_find(std::string_view bytes) const {
  if (vocab_index_.empty()) return -1;
  const size_t mask = vocab_index_.size() - 1, h = std::hash<std::string_view>{}(bytes);
  const uint64_t tag = uint64_t(h) >> 32 << 32;
  for (size_t i = h & mask;; i = (i + 1) & mask) {
    const uint64_t slot = vocab_index_[i];
    if (slot == 0) return -1;
    const int64_t id = int64_t(slot & 0xFFFFFFFFu) - 1;
    if ((slot & ~uint64_t(0xFFFFFFFFu)) == tag && bytes_[size_t(id)] == bytes) return id;
  }
}

void HfBpeTokenizer::vocab_insert(int64_t id) {
  auto place = [this](int64_t v) {
    const size_t mask = vocab_index_.size() - 1, h = std::hash<std::string_view>{}(bytes_[size_t(v)]);
    size_t i = h & mask;
    while (vocab_index_[i] != 0) i = (i + 1) & mask;
    vocab_index_[i] = uint64_t(h) >> 32 << 32 | uint64_t(v + 1);
  };
  if (2 * (vocab_count_ + 1) > vocab_index_.size()) {
    const std::vector<uint64_t> old = std::move(vocab_index_);
    vocab_index_.assign(std::max<size_t>(1024, 2 * old.size()), 0);
    for (uint64_t slot : old)
      if (slot != 0) place(int64_t(slot & 0xFFFFFFFFu) - 1);
  }
  place(id);
  ++vocab_count_;
}

int64_t HfBpeTokenizer::id_of(const std::string& text) const {
  if (const int64_t id = added_.id_of(text); id >= 0) return id;
  const std::optional<std::string> bytes = key_of(text);
  return bytes ? vocab_find(*bytes) : -1;
}

std::optional<std::string> HfBpeTokenizer::key_of(std::string_view text) const {
  return texts_are_bytes_ ? to_bytes(text) : std::optional<std::string>(std::string(text));
}

std::string HfBpeTokenizer::text_of(int64_t id) const {
  return texts_are_bytes_ ? byte_level_text(bytes_[size_t(id)]) : bytes_[size_t(id)];
}

// ---- the streaming reader --------------------------------------------------------

// The BPE's side of reading a tokenizer.json (hf::load_stream, hf::load_tree):
// model.vocab, model.merges and added_tokens entries go straight into the tables.
class HfBpeReader : public hf::TableSink {
 public:
  explicit HfBpeReader(HfBpeTokenizer& tok) : tok_(tok) {}

  static std::unique_ptr<Tokenizer> load(std::string_view text, bool saved, const std::string& where) {
    std::unique_ptr<HfBpeTokenizer> tok(new HfBpeTokenizer());
    HfBpeReader reader(*tok);
    hf::load_stream(text, saved, reader, where);
    return tok;
  }
  json& settings(json tokenizer, const std::string& at) override {
    return tok_.read_settings(std::move(tokenizer), at);
  }
  void vocab_entry(size_t, const std::string& key, const json& v, const std::string& at) override {
    tok_.add_vocab(key, v,
                   at);  // a list's element (key "") never comes: check_tables refuses a listed vocabulary first
  }
  void merge(size_t rank, const json& m, const std::string& at) override { tok_.add_merge(rank, m, at); }
  void added(size_t index, const json& a, const std::string& at) override { tok_.added_.add(index, a, at); }
  void finish(const std::string& at, int64_t eos_id) override { tok_.finish(at, eos_id); }

 private:
  HfBpeTokenizer& tok_;
};

HfBpeTokenizer::HfBpeTokenizer(json tj, const std::string& where, int64_t eos_id) {
  HfBpeReader reader(*this);
  hf::load_tree(std::move(tj), reader, where, eos_id);
}

namespace detail {

namespace {

// Finds the top level's "type" (a string or not), whether it has "model",
// and model.type, without building anything; stops at the top level's "type".
class FormPeek : public nlohmann::json_sax<json> {
 public:
  bool object = false, has_type = false, has_model = false, stopped = false;
  std::string type, model_type;  // the top level's "type" (a string), model.type (a string)

  bool null() override { return scalar(); }
  bool boolean(bool) override { return scalar(); }
  bool number_integer(number_integer_t) override { return scalar(); }
  bool number_unsigned(number_unsigned_t) override { return scalar(); }
  bool number_float(number_float_t, const string_t&) override { return scalar(); }
  bool string(string_t& v) override {
    if (depth_ == 1 && at_type_) type = v;
    if (depth_ == 2 && at_model_type_) model_type = v;
    return scalar();
  }
  bool binary(binary_t&) override { return false; }
  bool start_object(std::size_t) override {
    object |= depth_ == 0;
    return open();
  }
  bool start_array(std::size_t) override { return open(); }
  bool end_object() override { return --depth_, true; }
  bool end_array() override { return --depth_, true; }
  bool key(string_t& k) override {
    if (depth_ == 1) {
      at_type_ = k == "type";
      top_key_ = k;
      has_model |= k == "model";
    }
    at_model_type_ = depth_ == 2 && top_key_ == "model" && k == "type";
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }

 private:
  bool scalar() { return !(stopped = depth_ == 1 && at_type_ && (has_type = true)); }
  bool open() {
    if (depth_ == 1 && at_type_) return !(stopped = has_type = true);
    ++depth_;
    return true;
  }
  int depth_ = 0;
  bool at_type_ = false, at_model_type_ = false;
  std::string top_key_;
};

// The peek of `text`, or nullopt when it is none of the forms (also for text
// that is not JSON: parse_json reports it).
std::optional<FormPeek> peek(std::string_view text) {
  FormPeek p;
  bool whole = false;
  try {
    whole = json::sax_parse(text.begin(), text.end(), &p);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if ((!whole && !p.stopped) || !p.object) return std::nullopt;
  return p;
}

}  // namespace

// Saved: hf_bpe's type or a registered model kind's (hf_json.h); raw: a "model" and no "type".
HfBpeForm hf_bpe_form(std::string_view text) {
  const std::optional<FormPeek> p = peek(text);
  if (!p) return HfBpeForm::None;
  if (p->has_type) return p->type == "hf_bpe" || hf::hf_model_saved(p->type) ? HfBpeForm::Saved : HfBpeForm::None;
  return p->has_model ? HfBpeForm::Raw : HfBpeForm::None;
}

// A model type registered to its own tokenizer (Unigram) is read by it; BPE,
// and any other model type (refused naming it), by hf_bpe.
std::unique_ptr<Tokenizer> hf_bpe_tokenizer_from_text(std::string_view text, HfBpeForm form, const std::string& where) {
  const std::optional<FormPeek> p = peek(text);
  const hf::HfModelKind* kind = !p                         ? nullptr
                                : form == HfBpeForm::Saved ? hf::hf_model_saved(p->type)
                                                           : hf::hf_model(p->model_type);
  if (kind) return kind->from_text(text, form == HfBpeForm::Saved, where);
  return HfBpeReader::load(text, form == HfBpeForm::Saved, where);
}

}  // namespace detail

// ---- encoding and decoding -------------------------------------------------------

void HfBpeTokenizer::encode_piece(std::string_view piece, std::vector<int64_t>& out) const {
  if (ignore_merges_) {
    if (const int64_t id = vocab_find(piece); id >= 0) {
      out.push_back(id);
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

// The pieces of a SentencePiece-style part: Metaspace's spaces to "▁", its
// "▁" in front (always, or for the text's first part), and its split before
// each "▁"; without Metaspace the part (normalized already) is one piece.
void HfBpeTokenizer::sp_pieces(std::string_view part, bool first, std::vector<std::string>& out) const {
  if (!metaspace_) {
    out.emplace_back(part);
    return;
  }
  hf::metaspace_pieces(part, first, meta_, out);
}

void HfBpeTokenizer::encode_sp_piece(std::string_view piece, std::vector<int64_t>& out) const {
  if (piece.empty()) return;
  if (ignore_merges_)
    if (const int64_t id = vocab_find(piece); id >= 0) return out.push_back(id);
  std::vector<int64_t> sym;
  sym.reserve(piece.size());
  bool last_unk = false;
  for (size_t i = 0; i < piece.size();) {
    const size_t n = char_length(piece, i);
    const std::string_view ch = piece.substr(i, n);
    i += n;
    if (const int64_t id = vocab_find(ch); id >= 0) {
      sym.push_back(id);
      last_unk = false;
      continue;
    }
    if (byte_fallback_ && std::all_of(ch.begin(), ch.end(), [&](char b) { return byte_id_[uint8_t(b)] >= 0; })) {
      for (char b : ch) sym.push_back(byte_id_[uint8_t(b)]);
      last_unk = false;
      continue;
    }
    if (unk_ < 0) continue;  // no unk token: the character is dropped, as the tokenizers library does
    if (!(fuse_unk_ && last_unk)) sym.push_back(unk_);
    last_unk = true;
  }
  merge_by_rank(sym);
  out.insert(out.end(), sym.begin(), sym.end());
}

// Applies merges by rank, lowest first and leftmost among equal ranks (what
// merging every occurrence of the best pair left to right gives), with a
// heap of candidate pairs and links between the live symbols: O(n log n).
void HfBpeTokenizer::merge_by_rank(std::vector<int64_t>& sym) const {
  const size_t n = sym.size();
  if (n < 2) return;
  std::vector<int64_t> prev(n), next(n);
  for (size_t i = 0; i < n; ++i) prev[i] = int64_t(i) - 1, next[i] = i + 1 < n ? int64_t(i + 1) : -1;
  struct Candidate {
    int64_t rank, left, right, left_id, right_id;
    bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : left > o.left; }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> heap;
  auto offer = [&](int64_t l) {
    if (l < 0 || next[size_t(l)] < 0) return;
    const int64_t r = next[size_t(l)];
    if (auto it = merges_.find(key(sym[size_t(l)], sym[size_t(r)])); it != merges_.end())
      heap.push({it->second.rank, l, r, sym[size_t(l)], sym[size_t(r)]});
  };
  for (size_t i = 0; i + 1 < n; ++i) offer(int64_t(i));
  std::vector<bool> dead(n, false);
  while (!heap.empty()) {
    const Candidate c = heap.top();
    heap.pop();
    const auto l = size_t(c.left), r = size_t(c.right);
    // Stale: a symbol merged away, or changed, since the pair was offered.
    if (dead[l] || dead[r] || next[l] != c.right || sym[l] != c.left_id || sym[r] != c.right_id) continue;
    sym[l] = merges_.at(key(c.left_id, c.right_id)).id;
    dead[r] = true;
    next[l] = next[r];
    if (next[r] >= 0) prev[size_t(next[r])] = c.left;
    offer(prev[l]);
    offer(c.left);
  }
  size_t w = 0;
  for (size_t i = 0; i < n; ++i)
    if (!dead[i]) sym[w++] = sym[i];
  sym.resize(w);
}

std::vector<int64_t> HfBpeTokenizer::encode(std::string_view text) const {
  std::vector<int64_t> ids;
  std::vector<std::string> pieces;
  auto plain = [&](std::string_view part, bool first) {
    if (part.empty()) return;
    if (sp_) {
      pieces.clear();
      sp_pieces(part, first, pieces);
      for (const std::string& piece : pieces) encode_sp_piece(piece, ids);
      return;
    }
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
  // The normalizers (SentencePiece-style) apply before the "normalized" added tokens are cut out.
  std::function<std::string(std::string_view)> normalize;
  if (!normalizers_.empty())
    normalize = [&](std::string_view part) {
      std::string normalized(part);
      for (const auto& [kind, with] : normalizers_)
        normalized = kind == 0 ? with + normalized : replaced(normalized, " ", with);
      return normalized;
    };
  added_.encode(text, normalize, plain, ids);
  return ids;
}

std::string HfBpeTokenizer::decode(const std::vector<int64_t>& ids) const {
  std::string out;
  for (int64_t id : ids) out += token(id);
  if (strip_first_space_ && !out.empty() && out[0] == ' ') out.erase(0, 1);  // the decoder's Strip or Metaspace
  return out;
}

std::string HfBpeTokenizer::token(int64_t id) const {
  KS_CHECK(id >= 0 && id < vocab_size() && assigned_[size_t(id)], "tokenizer: id ", id,
           " is not a token of this hf_bpe tokenizer (", vocab_size(), " ids)");
  if (!sp_) return bytes_[size_t(id)];
  if (decode_bytes_ && byte_of_id_[size_t(id)] >= 0) return std::string(1, char(byte_of_id_[size_t(id)]));  // "<0xAB>"
  return replaced(bytes_[size_t(id)], kMetaspace, " ");
}

// ---- writing back ----------------------------------------------------------------

json HfBpeTokenizer::tokenizer_json() const {
  json t = settings_;
  if (t.contains("added_tokens"))
    for (size_t i = 0; i < added_.list().size(); ++i) t["added_tokens"].push_back(added_.to_json(i));
  json& model = t["model"];
  for (size_t id = 0; id < bytes_.size(); ++id)
    if (in_vocab_[id]) model["vocab"][text_of(int64_t(id))] = int64_t(id);
  for (size_t i = 0; i < merge_list_.size(); ++i) {
    const std::string l = text_of(int64_t(merge_list_[i] >> 32)), r = text_of(int64_t(merge_list_[i] & 0xFFFFFFFFu));
    model["merges"].push_back(merge_is_pair_[i] ? json::array({l, r}) : json(l + " " + r));
  }
  return t;
}

// One key and value a line for the settings; one entry a line for the three tables.
void HfBpeTokenizer::write_tokenizer(std::string& out) const {
  auto write_vocab = [&] {
    out += "{";
    bool first = true;
    for (size_t id = 0; id < bytes_.size(); ++id) {
      if (!in_vocab_[id]) continue;
      out += first ? "\n" : ",\n";
      first = false;
      out += json(text_of(int64_t(id))).dump();
      out += ": " + std::to_string(id);
    }
    out += "\n}";
  };
  auto write_merges = [&] {
    out += "[";
    for (size_t i = 0; i < merge_list_.size(); ++i) {
      out += i ? ",\n" : "\n";
      const std::string l = text_of(int64_t(merge_list_[i] >> 32)), r = text_of(int64_t(merge_list_[i] & 0xFFFFFFFFu));
      out += merge_is_pair_[i] ? json::array({l, r}).dump() : json(l + " " + r).dump();
    }
    out += "\n]";
  };
  out += "{";
  bool first = true;
  for (const auto& [k, v] : settings_.items()) {
    out += first ? "\n" : ",\n";
    first = false;
    out += json(k).dump() + ": ";
    if (k == "added_tokens") {
      out += "[";
      for (size_t i = 0; i < added_.list().size(); ++i) out += (i ? ",\n" : "\n") + added_.to_json(i).dump();
      out += "\n]";
    } else if (k == "model") {
      out += "{";
      bool first_in_model = true;
      for (const auto& [mk, mv] : v.items()) {
        if (mk == "vocab") continue;  // written before the merges, so a stream reads them in one pass
        out += first_in_model ? "\n" : ",\n";
        first_in_model = false;
        if (mk == "merges") {
          out += "\"vocab\": ";
          write_vocab();
          out += ",\n\"merges\": ";
          write_merges();
        } else {
          out += json(mk).dump() + ": " + mv.dump();
        }
      }
      out += "\n}";
    } else {
      out += v.dump();
    }
  }
  out += "\n}";
}

std::string HfBpeTokenizer::to_json() const {
  std::string out = str("{\"type\": \"hf_bpe\", \"eos_id\": ", eos_, ",\n\"tokenizer\": ");
  try {
    write_tokenizer(out);
  } catch (const json::exception& e) {
    throw Error(str("tokenizer save: the tokenizer cannot be written as JSON (", e.what(), ")"));
  }
  return out + "}";
}

}  // namespace ks::data
