// datasets/hf_unigram.h — the Unigram tokenizer of a Hugging Face
// tokenizer.json (tokenizer type "hf_unigram"): SentencePiece's unigram
// language model as T5, mT5, XLM-R, Marian and mBART ship it, converted by
// transformers' convert_slow_tokenizer (SpmConverter).
//
// Encoding, as the `tokenizers` library does it for these files:
//   1. the added tokens ("</s>", "<pad>", "<unk>", ...) are cut out first
//      (datasets/hf_json.h, the same two passes as hf_bpe);
//   2. the rest goes through the normalizers, in the file's order:
//      Precompiled (SentencePiece's compiled normalization rule, e.g.
//      nmt_nfkc: NFKC plus its whitespace and control-character rules, as
//      the base64 of its precompiled_charsmap: a little-endian uint32 trie
//      size, a darts-clone double-array trie of that many bytes, then the
//      pool of NUL-terminated replacements); at each position the longest
//      key of the trie that starts there is replaced by its string, else
//      one character is kept, as sentencepiece's normalizer.cc does
//      (SpCharsmap below); Replace of a string, or of the regex " {2,}" (a
//      run of two or more spaces); Strip (Unicode White_Space, left and/or
//      right); a Sequence of those;
//   3. pre-tokenizers: WhitespaceSplit (split at Unicode White_Space,
//      dropped), Metaspace (datasets/hf_json.h: "▁" for spaces,
//      prepend_scheme, split), a Sequence of those, or none;
//   4. each piece is cut by Viterbi over the lattice of vocabulary pieces
//      that match at each byte: the path of the highest sum of scores (log
//      probabilities), ties to the first found (shorter pieces first), as
//      sentencepiece's EncodeOptimized and tokenizers' encode_optimized do;
//      a character that no one-character piece covers is an unknown node of
//      score min_score - 10 (min over the whole vocabulary, as tokenizers
//      does); consecutive unknowns are fused into one; a fused unknown that
//      is not a piece becomes its bytes' "<0xAB>" pieces where
//      model.byte_fallback is set and every byte has one, else model.unk_id.
//   Bytes that are not UTF-8 (tokenizers never sees them) are characters of
//   one byte each: unknown, or their byte piece.
// Ids: model.vocab's index, then added tokens' own ids (checked against the
// vocabulary where their content is a piece). The end-of-text id is the
// saved one, or the token named </s> (or <|endoftext|>, <|end_of_text|>).
// The post-processor (T5's </s> after the text) is not applied: callers add
// their own specials.
//
// Decoding follows the decoder (datasets/hf_json.h hf::SpDecoder): "▁" to a
// space, the first space dropped by Metaspace (prepend_scheme) or Strip,
// "<0xAB>" to its byte with ByteFallback; no decoder: the tokens' texts
// joined by spaces, as tokenizers does. Never lossless: normalization maps
// many texts to one (NFKC, dropped spaces), unknown characters decode to the
// unk token's text, and a literal "▁" decodes to a space.
//
// Where tokenizers' Precompiled differs from sentencepiece: it looks up a
// whole grapheme cluster of under 6 bytes and replaces all of it by its
// SHORTEST matching prefix's string (spm_precompiled's transform takes the
// first result), and stops a lookup at a NUL byte; Keystone follows
// sentencepiece (longest prefix, grapheme clusters ignored). The two agree
// wherever a cluster is one character or the charsmap's keys are whole
// clusters (as nmt_nfkc's are for composed and decomposed Latin letters);
// tests/interop/test_unigram.py compares the ids with sentencepiece itself.
//
// Saved form: {"type": "hf_unigram", "eos_id": N, "tokenizer": <the tokenizer.json object>},
// read as a stream (model.vocab and added_tokens entry by entry,
// datasets/hf_json.h). Refused, naming the key: another normalizer
// (Lowercase, NFKD, NFKC, StripAccents, ...), a Replace of another regex,
// another pre-tokenizer or decoder, a model key other than type, unk_id,
// vocab and byte_fallback, an empty or repeated piece, a score that is not a
// number, an unk_id that is null (tokenizers takes one and fails on the
// first unknown character; every SentencePiece model has an unknown piece,
// and here encode never fails) or outside the vocabulary, a charsmap that is not base64 or
// whose trie does not fit. Not here: training, sampling (alpha, nbest).
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "datasets/hf_json.h"
#include "datasets/tokenizer.h"

namespace ks::data {

// SentencePiece's precompiled_charsmap (the bytes, after base64): errors
// name `where`. Every trie step is bounds-checked, so a damaged trie gives
// no match rather than a read outside it, and a key is at most 256 bytes
// (a trie that matches forever would make normalizing a text quadratic).
class SpCharsmap {
 public:
  SpCharsmap(std::string blob, const std::string& where);
  // The longest key that is a prefix of `text` (no NUL-byte stop): its
  // replacement and length, or {"", 0} when none is.
  std::pair<std::string_view, size_t> longest(std::string_view text) const;
  // `text` with each longest match replaced, other characters kept (a byte
  // that starts no UTF-8 character is kept as it is).
  std::string normalize(std::string_view text) const;
  const std::string& blob() const { return blob_; }

 private:
  std::string blob_;
  std::vector<uint32_t> units_;  // the double array
  std::string_view pool_;        // into blob_
};

// Base64 (standard alphabet, '=' padding optional) to bytes; nullopt when
// `text` is not base64.
std::optional<std::string> decode_base64(std::string_view text);

class HfUnigramTokenizer : public Tokenizer {
 public:
  // From a parsed tokenizer.json; `eos_id` < 0: found by name (or none).
  // Errors name `where` and the key.
  HfUnigramTokenizer(nlohmann::json tokenizer_json, const std::string& where, int64_t eos_id = -1);

  std::string type() const override { return "hf_unigram"; }
  int64_t vocab_size() const override { return int64_t(text_.size()); }  // the largest id + 1
  std::vector<int64_t> encode(std::string_view text) const override;
  std::string decode(const std::vector<int64_t>& ids) const override;
  bool has_id(int64_t id) const override { return id >= 0 && id < vocab_size() && assigned_[size_t(id)]; }
  std::string token(int64_t id) const override;
  bool lossless() const override { return false; }  // see the file comment
  std::string to_json() const override;
  int64_t eos_id() const override { return eos_; }
  nlohmann::json hf_json() const override { return tokenizer_json(); }
  std::string hf_refusal() const override { return ""; }

  // The tokenizer.json object (what export writes back), rebuilt from the tables.
  nlohmann::json tokenizer_json() const;
  // The id of a token's text (a piece or an added token), or -1.
  int64_t id_of(const std::string& token_text) const;
  // Model.vocab's pieces of one normalized, pre-tokenized piece, as strings
  // (before byte fallback and unk ids): the Viterbi path, unknowns fused.
  std::vector<std::string> viterbi(std::string_view piece) const;

 private:
  friend class HfUnigramReader;  // hf_unigram.cpp: the streaming reader
  HfUnigramTokenizer() = default;

  nlohmann::json& read_settings(nlohmann::json tokenizer, const std::string& at);  // keeps it, returns it
  void read_normalizer(const nlohmann::json& n, const std::string& name, const std::string& at);
  void read_pre_tokenizer(const nlohmann::json& p, const std::string& name, const std::string& at);
  void add_piece(size_t index, const nlohmann::json& entry, const std::string& at);
  void finish(const std::string& at, int64_t eos_id);
  std::string normalize(std::string_view text) const;
  void encode_piece(std::string_view piece, std::vector<int64_t>& out) const;

  // The trie of pieces: nodes in breadth-first order, a node's children one
  // run sorted by byte (binary-searched).
  int32_t child(int32_t node, unsigned char c) const;
  void build_trie(const std::string& at);

  nlohmann::json settings_;          // the tokenizer.json less model.vocab and added_tokens (emptied)
  std::vector<std::string> pieces_;  // model.vocab in order: id -> piece
  std::vector<double> scores_;       // id -> score
  std::vector<std::string> text_;    // id -> its text (piece or added token)
  std::vector<bool> assigned_;       // id -> whether the file gives it a token
  hf::AddedTokens added_;
  std::vector<int32_t> first_child_;    // node -> its first child; first_child_[node + 1] ends the run
  std::vector<unsigned char> label_;    // node -> the byte on the edge into it
  std::vector<int32_t> piece_of_node_;  // node -> the piece it spells, or -1
  int64_t unk_ = -1;
  bool byte_fallback_ = false;
  int64_t byte_id_[256];  // byte -> the id of its "<0xAB>" piece, or -1
  double unk_score_ = 0;  // min_score - 10

  // The normalizers, in order.
  struct Step {
    enum Kind { Precompiled, Replace, ReplaceSpaceRuns, Strip } kind;
    std::string from, to;              // Replace: from -> to; ReplaceSpaceRuns: to
    bool left = false, right = false;  // Strip
    size_t charsmap = 0;               // Precompiled: index into charsmaps_
  };
  std::vector<Step> normalizers_;
  std::vector<SpCharsmap> charsmaps_;
  // The pre-tokenizers, in order: WhitespaceSplit, or Metaspace with its settings.
  struct PreStep {
    bool whitespace_split;
    hf::Metaspace meta;
  };
  std::vector<PreStep> pre_;
  bool decoder_ = false;  // a decoder is given (else tokens are joined by spaces)
  hf::SpDecoder decode_;
  std::vector<int16_t> byte_of_id_;  // id -> the byte of its "<0xAB>" piece, or -1
  int64_t eos_ = -1;
};

namespace detail {
// Reads a tokenizer.json whose model.type is "Unigram" (raw) or a saved
// hf_unigram tokenizer (saved), as a stream; errors name `where`.
std::unique_ptr<Tokenizer> hf_unigram_from_text(std::string_view text, bool saved, const std::string& where);
}  // namespace detail

}  // namespace ks::data
