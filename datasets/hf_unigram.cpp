// datasets/hf_unigram.cpp — reading a tokenizer.json's Unigram model (as a
// stream, or from a parsed tree), SentencePiece's precompiled charsmap, the
// normalizers and pre-tokenizers these files use, Viterbi encoding,
// decoding, and writing the file back from the tables.
#include "datasets/hf_unigram.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <numeric>

#include "core/error.h"
#include "datasets/tokenizer_json.h"
#include "nn/user_input.h"

namespace ks::data {

using hf::flag_or;
using hf::is_null_or_absent;
using hf::json;
using hf::kMetaspace;
using hf::text_or;

// ---- base64 and the charsmap ------------------------------------------------------

std::optional<std::string> decode_base64(std::string_view text) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    return c == '+' ? 62 : c == '/' ? 63 : -1;
  };
  while (!text.empty() && text.back() == '=') text.remove_suffix(1);
  if (text.size() % 4 == 1) return std::nullopt;
  std::string out;
  out.reserve(text.size() / 4 * 3 + 2);
  uint32_t acc = 0;
  int bits = 0;
  for (char c : text) {
    const int v = value(c);
    if (v < 0) return std::nullopt;
    acc = (acc << 6 | uint32_t(v)) & 0xFFFFFF;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += char((acc >> bits) & 0xFF);
    }
  }
  return out;
}

namespace {
// darts-clone's unit fields (sentencepiece's third_party/darts_clone).
bool has_leaf(uint32_t u) { return (u >> 8) & 1; }
uint32_t leaf_value(uint32_t u) { return u & ((1u << 31) - 1); }
uint32_t label(uint32_t u) { return u & ((1u << 31) | 0xFF); }
uint32_t offset(uint32_t u) { return (u >> 10) << ((u & (1u << 9)) >> 6); }
}  // namespace

SpCharsmap::SpCharsmap(std::string blob, const std::string& where) : blob_(std::move(blob)) {
  // sentencepiece's DecodePrecompiledCharsMap: the size, then a trie that leaves room for the pool.
  KS_CHECK(blob_.size() > 4, where, ": ", blob_.size(), " bytes, too short for a charsmap (a trie size, a trie)");
  uint32_t trie_bytes = 0;
  for (int k = 3; k >= 0; --k) trie_bytes = trie_bytes << 8 | uint32_t(static_cast<unsigned char>(blob_[size_t(k)]));
  KS_CHECK(trie_bytes >= 4 && trie_bytes % 4 == 0 && trie_bytes < blob_.size() - 4, where, ": the trie size ",
           trie_bytes, " does not fit the charsmap's ", blob_.size(),
           " bytes (a positive multiple of 4, with room for the pool)");
  units_.resize(trie_bytes / 4);
  for (size_t i = 0; i < units_.size(); ++i) {
    uint32_t u = 0;
    for (int k = 3; k >= 0; --k) u = u << 8 | uint32_t(static_cast<unsigned char>(blob_[4 + 4 * i + size_t(k)]));
    units_[i] = u;
  }
  pool_ = std::string_view(blob_).substr(4 + trie_bytes);
}

std::pair<std::string_view, size_t> SpCharsmap::longest(std::string_view text) const {
  std::pair<std::string_view, size_t> best{std::string_view(), 0};
  const size_t n = units_.size();
  size_t id = offset(units_[0]);
  // A damaged trie can match every byte (a unit that leads back to itself), which would make a text's
  // normalization quadratic; no real rule's key is near this long (nmt_nfkc's are a few characters).
  constexpr size_t kMaxKeyBytes = 256;
  for (size_t i = 0; i < std::min(text.size(), kMaxKeyBytes); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    id ^= c;
    if (id >= n || label(units_[id]) != c) break;
    const uint32_t unit = units_[id];
    id ^= offset(unit);
    if (id >= n) break;
    if (has_leaf(unit)) {
      const size_t v = leaf_value(units_[id]);
      if (v < pool_.size()) {
        const size_t end = pool_.find('\0', v);
        best = {pool_.substr(v, end == std::string_view::npos ? std::string_view::npos : end - v), i + 1};
      }
    }
  }
  return best;
}

std::string SpCharsmap::normalize(std::string_view text) const {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const auto [with, length] = longest(text.substr(i));
    if (length > 0) {
      out += with;
      i += length;
      continue;
    }
    const size_t n = hf::char_length(text, i);
    if (n == 1 && static_cast<unsigned char>(text[i]) >= 0x80)
      out += "\xEF\xBF\xBD";  // a malformed byte: U+FFFD, one byte consumed, as sentencepiece's NormalizePrefix
    else
      out.append(text, i, n);
    i += n;
  }
  return out;
}

// ---- text helpers ----------------------------------------------------------------

namespace {

// The length of the Unicode White_Space character at s[i] (Rust's
// char::is_whitespace, what tokenizers' Strip and WhitespaceSplit test), or 0.
size_t white_space_at(std::string_view s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  if (c < 0x80) return (c >= 9 && c <= 13) || c == ' ' ? 1 : 0;
  const size_t n = hf::char_length(s, i);
  if (n == 1) return 0;
  char32_t cp = n == 2 ? c & 0x1F : n == 3 ? c & 0x0F : c & 0x07;
  for (size_t k = 1; k < n; ++k) cp = cp << 6 | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  const bool ws = cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 ||
                  cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
  return ws ? n : 0;
}

// The bytes that end `s`'s trailing White_Space run.
size_t trailing_space(std::string_view s) {
  size_t end = s.size();
  for (size_t i = 0, last_non_space_end = 0; i < s.size();) {
    const size_t w = white_space_at(s, i);
    const size_t n = w ? w : hf::char_length(s, i);
    i += n;
    if (!w) last_non_space_end = i;
    end = last_non_space_end;
  }
  return s.size() - end;
}

std::string byte_piece(int b) {
  char name[8];
  std::snprintf(name, sizeof name, "<0x%02X>", b);
  return name;
}

}  // namespace

// ---- loading -------------------------------------------------------------------

json& HfUnigramTokenizer::read_settings(json tokenizer, const std::string& at) {
  settings_ = std::move(tokenizer);
  const json& tj = settings_;  // const: a lookup must not add a key that export would write back
  KS_CHECK(tj.is_object(), at, "a tokenizer.json must be a JSON object");
  KS_CHECK(tj.contains("model") && tj.at("model").is_object(), at, "missing the \"model\" object");
  const json& model = tj.at("model");
  const std::string mtype = text_or(model, "type", "", at, "model.");
  KS_CHECK(mtype == "Unigram", at, "model.type \"", mtype, "\": expected Unigram");
  for (const auto& [k, v] : model.items())
    KS_CHECK(k == "type" || k == "unk_id" || k == "vocab" || k == "byte_fallback", at, "model.", k,
             " is not supported (a Unigram model holds type, unk_id, vocab and byte_fallback)");
  KS_CHECK(model.contains("vocab") && model.at("vocab").is_array(), at, "model.vocab must be a list of [piece, score]");
  KS_CHECK(is_null_or_absent(model, "unk_id") || model.at("unk_id").is_number_integer(), at,
           "model.unk_id: expected an integer, got ", nn::json_excerpt(model.at("unk_id")));
  byte_fallback_ = flag_or(model, "byte_fallback", false, at, "model.");
  if (tj.contains("added_tokens")) KS_CHECK(tj.at("added_tokens").is_array(), at, "added_tokens must be a list");
  if (!is_null_or_absent(tj, "normalizer")) read_normalizer(tj.at("normalizer"), "normalizer", at);
  if (!is_null_or_absent(tj, "pre_tokenizer")) read_pre_tokenizer(tj.at("pre_tokenizer"), "pre_tokenizer", at);
  if (!is_null_or_absent(tj, "decoder")) {
    decode_ = hf::read_sp_decoder(tj.at("decoder"), at);
    decoder_ = true;
  }
  return settings_;
}

// Precompiled, Replace (a string, or the regex " {2,}"), Strip, and Sequences of them.
void HfUnigramTokenizer::read_normalizer(const json& n, const std::string& name, const std::string& at) {
  KS_CHECK(n.is_object(), at, name, ": expected an object, got ", nn::json_excerpt(n));
  const std::string type = text_or(n, "type", "", at, name + ".");
  Step step{};
  if (type == "Sequence") {
    KS_CHECK(n.contains("normalizers") && n.at("normalizers").is_array(), at, name, ".normalizers must be a list");
    for (size_t i = 0; i < n.at("normalizers").size(); ++i)
      read_normalizer(n.at("normalizers")[i], str(name, ".normalizers[", i, "]"), at);
    return;
  } else if (type == "Precompiled") {
    KS_CHECK(n.contains("precompiled_charsmap") && n.at("precompiled_charsmap").is_string(), at, name,
             ".precompiled_charsmap: expected a base64 string, got ",
             n.contains("precompiled_charsmap") ? nn::json_excerpt(n.at("precompiled_charsmap")) : "nothing");
    std::optional<std::string> blob = decode_base64(n.at("precompiled_charsmap").get_ref<const std::string&>());
    KS_CHECK(blob.has_value(), at, name, ".precompiled_charsmap is not base64");
    charsmaps_.emplace_back(std::move(*blob), str(at, name, ".precompiled_charsmap"));
    step.kind = Step::Precompiled;
    step.charsmap = charsmaps_.size() - 1;
  } else if (type == "Replace") {
    const json pat = n.contains("pattern") && n.at("pattern").is_object() ? n.at("pattern") : json::object();
    step.to = text_or(n, "content", "", at, name + ".");
    if (pat.contains("String") && pat.at("String").is_string() && !pat.at("String").get<std::string>().empty()) {
      step.kind = Step::Replace;
      step.from = pat.at("String").get<std::string>();
    } else {
      KS_CHECK(pat.contains("Regex") && pat.at("Regex") == " {2,}", at, name, ".pattern ", nn::json_excerpt(pat),
               ": only a non-empty {\"String\": ...} or {\"Regex\": \" {2,}\"} is supported");
      step.kind = Step::ReplaceSpaceRuns;
    }
  } else if (type == "Strip") {
    step.kind = Step::Strip;
    step.left = flag_or(n, "strip_left", false, at, name + ".");
    step.right = flag_or(n, "strip_right", false, at, name + ".");
  } else {
    throw Error(str(at, name, " ", nn::json_excerpt(n),
                    ": only Precompiled, Replace and Strip normalizers (and a Sequence of them) are supported for a "
                    "Unigram model"));
  }
  normalizers_.push_back(std::move(step));
}

void HfUnigramTokenizer::read_pre_tokenizer(const json& p, const std::string& name, const std::string& at) {
  const std::string type = p.is_object() ? text_or(p, "type", "", at, name + ".") : "";
  if (type == "Sequence") {
    KS_CHECK(p.contains("pretokenizers") && p.at("pretokenizers").is_array(), at, name,
             ".pretokenizers must be a list");
    for (size_t i = 0; i < p.at("pretokenizers").size(); ++i)
      read_pre_tokenizer(p.at("pretokenizers")[i], str(name, ".pretokenizers[", i, "]"), at);
  } else if (type == "Metaspace") {
    pre_.push_back({false, hf::read_metaspace(p, name, at)});
  } else {
    KS_CHECK(type == "WhitespaceSplit", at, name, " ", nn::json_excerpt(p),
             ": only Metaspace and WhitespaceSplit pre-tokenizers (and a Sequence of them) are supported for a "
             "Unigram model");
    pre_.push_back({true, {}});
  }
}

// model.vocab[index]: [piece, score], the piece non-empty.
void HfUnigramTokenizer::add_piece(size_t index, const json& e, const std::string& at) {
  KS_CHECK(index < size_t(kMaxVocabSize), at, "model.vocab holds more entries than the vocabulary limit of ",
           kMaxVocabSize);
  KS_CHECK(e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_number(), at, "model.vocab[", index,
           "] must be [piece, score], got ", nn::json_excerpt(e));
  KS_CHECK(!e[0].get_ref<const std::string&>().empty(), at, "model.vocab[", index, "]: the piece is empty");
  pieces_.push_back(e[0].get<std::string>());
  scores_.push_back(e[1].get<double>());
}

void HfUnigramTokenizer::finish(const std::string& at, int64_t eos_id) {
  KS_CHECK(!pieces_.empty(), at, "model.vocab is empty");
  build_trie(at);  // refuses a repeated piece
  text_ = pieces_;
  assigned_.assign(pieces_.size(), true);
  const json& model = settings_.at("model");
  // tokenizers takes a file without one and fails on the first character no piece covers; refused here
  // instead, so that encode never fails (every SentencePiece model has an unknown piece).
  KS_CHECK(!is_null_or_absent(model, "unk_id"), at,
           "model.unk_id is null: a Unigram model without an unknown piece is not supported");
  unk_ = model.at("unk_id").get<int64_t>();
  KS_CHECK(unk_ >= 0 && unk_ < int64_t(pieces_.size()), at, "model.unk_id ", unk_, " is not an index of model.vocab (",
           pieces_.size(), " pieces)");
  unk_score_ = *std::min_element(scores_.begin(), scores_.end()) - 10.0;  // K_UNK_PENALTY
  byte_of_id_.assign(pieces_.size(), -1);
  for (int b = 0; b < 256; ++b) {
    byte_id_[b] = id_of(byte_piece(b));
    if (byte_id_[b] >= 0) byte_of_id_[size_t(byte_id_[b])] = int16_t(b);
  }
  for (size_t i = 0; i < added_.list().size(); ++i) {
    const hf::AddedTokens::Added& a = added_.list()[i];
    const int64_t in_vocab = id_of(a.content);
    if (in_vocab >= 0) {
      KS_CHECK(in_vocab == a.id, at, "added_tokens[", i, "] \"", a.content, "\" has id ", a.id,
               " but model.vocab gives it ", in_vocab);
      continue;
    }
    KS_CHECK(a.id >= 0 && a.id < kMaxVocabSize, at, "added_tokens[", i, "]: id ", a.id, " is outside [0, ",
             kMaxVocabSize, ")");
    if (size_t(a.id) >= text_.size()) {
      text_.resize(size_t(a.id) + 1);
      assigned_.resize(size_t(a.id) + 1, false);
      byte_of_id_.resize(size_t(a.id) + 1, -1);
    }
    KS_CHECK(!assigned_[size_t(a.id)], at, "added_tokens[", i, "]: id ", a.id, " is given to two tokens");
    assigned_[size_t(a.id)] = true;
    text_[size_t(a.id)] = a.content;
  }
  added_.build();
  if (eos_id >= 0) {
    KS_CHECK(has_id(eos_id), at, "the end-of-text id ", eos_id, " is not a token of this tokenizer");
    eos_ = eos_id;
  } else {
    for (const char* name : hf::kEosNames)
      if (int64_t id = id_of(name); id >= 0 && eos_ < 0) eos_ = id;
  }
}

// Breadth-first over the pieces sorted bytewise: a node's range of pieces
// shares its prefix; the piece equal to the prefix (first in the range) ends
// there, the rest group by their next byte into its children.
void HfUnigramTokenizer::build_trie(const std::string& at) {
  std::vector<int32_t> order(pieces_.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return pieces_[size_t(a)] < pieces_[size_t(b)]; });
  for (size_t k = 1; k < order.size(); ++k)
    KS_CHECK(pieces_[size_t(order[k - 1])] != pieces_[size_t(order[k])], at, "model.vocab[",
             std::min(order[k - 1], order[k]), "] and [", std::max(order[k - 1], order[k]), "] are the same piece \"",
             pieces_[size_t(order[k])], "\"");
  struct Range {
    size_t lo, hi;
  };
  std::vector<Range> ranges{{0, order.size()}};  // node -> its pieces
  label_.assign(1, 0);
  piece_of_node_.assign(1, -1);
  first_child_.clear();
  for (size_t node = 0, depth_end = 1, depth = 0; node < ranges.size(); ++node) {
    if (node == depth_end) depth_end = ranges.size(), ++depth;
    auto [lo, hi] = ranges[node];
    first_child_.push_back(int32_t(ranges.size()));
    if (lo < hi && pieces_[size_t(order[lo])].size() == depth) piece_of_node_[node] = order[lo++];
    while (lo < hi) {
      const char c = pieces_[size_t(order[lo])][depth];
      size_t end = lo + 1;
      while (end < hi && pieces_[size_t(order[end])][depth] == c) ++end;
      ranges.push_back({lo, end});
      label_.push_back(static_cast<unsigned char>(c));
      piece_of_node_.push_back(-1);
      lo = end;
    }
  }
  first_child_.push_back(int32_t(ranges.size()));
}

int32_t HfUnigramTokenizer::child(int32_t node, unsigned char c) const {
  const auto first = label_.begin() + first_child_[size_t(node)],
             last = label_.begin() + first_child_[size_t(node) + 1];
  const auto it = std::lower_bound(first, last, c);
  return it != last && *it == c ? int32_t(it - label_.begin()) : -1;
}

int64_t HfUnigramTokenizer::id_of(const std::string& text) const {
  if (const int64_t id = added_.id_of(text); id >= 0) return id;
  int32_t node = 0;
  for (size_t i = 0; i < text.size() && node >= 0; ++i) node = child(node, static_cast<unsigned char>(text[i]));
  return node >= 0 ? piece_of_node_[size_t(node)] : -1;
}

// ---- the streaming reader --------------------------------------------------------

// The Unigram's side of reading a tokenizer.json (hf::load_stream, hf::load_tree).
class HfUnigramReader : public hf::TableSink {
 public:
  explicit HfUnigramReader(HfUnigramTokenizer& tok) : tok_(tok) {}

  static std::unique_ptr<Tokenizer> load(std::string_view text, bool saved, const std::string& where) {
    std::unique_ptr<HfUnigramTokenizer> tok(new HfUnigramTokenizer());
    HfUnigramReader reader(*tok);
    hf::load_stream(text, saved, reader, where);
    return tok;
  }
  json& settings(json tokenizer, const std::string& at) override {
    return tok_.read_settings(std::move(tokenizer), at);
  }
  void vocab_entry(size_t index, const std::string& key, const json& v, const std::string& at) override {
    KS_CHECK(key.empty(), at, "model.vocab must be a list of [piece, score]");
    tok_.add_piece(index, v, at);
  }
  void merge(size_t, const json&, const std::string& at) override {
    throw Error(str(at, "model.merges: a Unigram model has no merges"));
  }
  void added(size_t index, const json& a, const std::string& at) override { tok_.added_.add(index, a, at); }
  void finish(const std::string& at, int64_t eos_id) override { tok_.finish(at, eos_id); }

 private:
  HfUnigramTokenizer& tok_;
};

HfUnigramTokenizer::HfUnigramTokenizer(json tj, const std::string& where, int64_t eos_id) {
  HfUnigramReader reader(*this);
  hf::load_tree(std::move(tj), reader, where, eos_id);
}

namespace detail {
std::unique_ptr<Tokenizer> hf_unigram_from_text(std::string_view text, bool saved, const std::string& where) {
  return HfUnigramReader::load(text, saved, where);
}
}  // namespace detail

// ---- encoding ----------------------------------------------------------------------

std::string HfUnigramTokenizer::normalize(std::string_view text) const {
  std::string s(text);
  for (const Step& step : normalizers_) {
    switch (step.kind) {
      case Step::Precompiled: s = charsmaps_[step.charsmap].normalize(s); break;
      case Step::Replace: s = hf::replaced(s, step.from, step.to); break;
      case Step::ReplaceSpaceRuns: {
        std::string out;
        for (size_t i = 0; i < s.size();) {
          size_t j = i;
          while (j < s.size() && s[j] == ' ') ++j;
          if (j - i >= 2) {
            out += step.to;
            i = j;
          } else {
            out += s[i++];
          }
        }
        s = std::move(out);
        break;
      }
      case Step::Strip: {
        size_t start = 0;
        while (step.left && start < s.size() && white_space_at(s, start)) start += white_space_at(s, start);
        const size_t end = step.right ? s.size() - trailing_space(std::string_view(s).substr(start)) : s.size();
        s = s.substr(start, end - start);
        break;
      }
    }
  }
  return s;
}

std::vector<std::string> HfUnigramTokenizer::viterbi(std::string_view s) const {
  // best[k]: the best path over s[0, k) — its score, where its last node starts, and that node's id.
  struct Best {
    double score = 0;
    int64_t start = -1, id = -1;
  };
  std::vector<Best> best(s.size() + 1);
  for (size_t start = 0; start < s.size();) {
    const double here = best[start].score;
    const size_t mblen = hf::char_length(s, start);
    bool has_single_node = false;
    auto offer = [&](size_t end, double score, int64_t id) {
      Best& target = best[end];
      if (target.start < 0 || here + score > target.score) target = {here + score, int64_t(start), id};
    };
    int32_t node = 0;
    for (size_t k = start; k < s.size(); ++k) {
      if ((node = child(node, static_cast<unsigned char>(s[k]))) < 0) break;
      if (const int32_t id = piece_of_node_[size_t(node)]; id >= 0) {
        offer(k + 1, scores_[size_t(id)], id);
        has_single_node |= k + 1 - start == mblen;
      }
    }
    if (!has_single_node) offer(start + mblen, unk_score_, unk_);
    start += mblen;
  }
  // Back from the end; consecutive unknowns (and the unk piece itself) fused into one, as tokenizers does.
  std::vector<std::string> out;
  std::string unknown;
  for (size_t end = s.size(); end > 0;) {
    const Best& b = best[end];
    const std::string_view piece = s.substr(size_t(b.start), end - size_t(b.start));
    if (b.id == unk_) {
      unknown.insert(0, piece);
    } else {
      if (!unknown.empty()) out.push_back(std::exchange(unknown, std::string()));
      out.emplace_back(piece);
    }
    end = size_t(b.start);
  }
  if (!unknown.empty()) out.push_back(std::move(unknown));
  std::reverse(out.begin(), out.end());
  return out;
}

void HfUnigramTokenizer::encode_piece(std::string_view piece, std::vector<int64_t>& out) const {
  if (piece.empty()) return;
  for (const std::string& p : viterbi(piece)) {
    int32_t node = 0;
    for (size_t i = 0; i < p.size() && node >= 0; ++i) node = child(node, static_cast<unsigned char>(p[i]));
    if (node >= 0 && piece_of_node_[size_t(node)] >= 0) {
      out.push_back(piece_of_node_[size_t(node)]);
    } else if (byte_fallback_ &&
               std::all_of(p.begin(), p.end(), [&](char b) { return byte_id_[static_cast<unsigned char>(b)] >= 0; })) {
      for (char b : p) out.push_back(byte_id_[static_cast<unsigned char>(b)]);
    } else {
      out.push_back(unk_);
    }
  }
}

std::vector<int64_t> HfUnigramTokenizer::encode(std::string_view text) const {
  std::vector<int64_t> ids;
  // The pre-tokenizers, in order; `first`: the piece starts the text (Metaspace's prepend_scheme "first").
  std::vector<std::pair<std::string, bool>> pieces, next;
  std::vector<std::string> cut;
  auto plain = [&](std::string_view part, bool first) {
    if (part.empty()) return;
    pieces.assign(1, {std::string(part), first});
    for (const PreStep& step : pre_) {
      next.clear();
      for (auto& [s, f] : pieces) {
        if (step.whitespace_split) {
          for (size_t i = 0; i < s.size();) {
            if (const size_t w = white_space_at(s, i)) {
              i += w;
              continue;
            }
            size_t j = i;
            while (j < s.size() && !white_space_at(s, j)) j += hf::char_length(s, j);
            next.emplace_back(s.substr(i, j - i), f && i == 0);
            i = j;
          }
        } else {
          cut.clear();
          hf::metaspace_pieces(s, f, step.meta, cut);
          for (size_t k = 0; k < cut.size(); ++k) next.emplace_back(std::move(cut[k]), f && k == 0);
        }
      }
      pieces.swap(next);
    }
    for (const auto& [s, f] : pieces) encode_piece(s, ids);
  };
  std::function<std::string(std::string_view)> normalize_fn;
  if (!normalizers_.empty()) normalize_fn = [this](std::string_view part) { return normalize(part); };
  added_.encode(text, normalize_fn, plain, ids);
  return ids;
}

// ---- decoding ------------------------------------------------------------------------

std::string HfUnigramTokenizer::token(int64_t id) const {
  KS_CHECK(has_id(id), "tokenizer: id ", id, " is not a token of this hf_unigram tokenizer (", vocab_size(), " ids)");
  if (!decoder_) return text_[size_t(id)];
  if (decode_.decode_bytes && byte_of_id_[size_t(id)] >= 0) return std::string(1, char(byte_of_id_[size_t(id)]));
  return hf::replaced(text_[size_t(id)], kMetaspace, " ");
}

std::string HfUnigramTokenizer::decode(const std::vector<int64_t>& ids) const {
  std::string out;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (!decoder_ && i > 0) out += ' ';  // no decoder: tokenizers joins the tokens with spaces
    out += token(ids[i]);
  }
  if (decoder_ && decode_.strip_first_space && !out.empty() && out[0] == ' ') out.erase(0, 1);
  return out;
}

// ---- writing back ----------------------------------------------------------------

json HfUnigramTokenizer::tokenizer_json() const {
  json t = settings_;
  if (t.contains("added_tokens"))
    for (size_t i = 0; i < added_.list().size(); ++i) t["added_tokens"].push_back(added_.to_json(i));
  json& vocab = t["model"]["vocab"];
  for (size_t id = 0; id < pieces_.size(); ++id) vocab.push_back(json::array({pieces_[id], scores_[id]}));
  return t;
}

std::string HfUnigramTokenizer::to_json() const {
  try {
    return str("{\"type\": \"hf_unigram\", \"eos_id\": ", eos_, ",\n\"tokenizer\": ", tokenizer_json().dump(), "}");
  } catch (const json::exception& e) {
    throw Error(str("tokenizer save: the tokenizer cannot be written as JSON (", e.what(), ")"));
  }
}

}  // namespace ks::data
