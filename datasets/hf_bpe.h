// datasets/hf_bpe.h — the BPE tokenizer of a Hugging Face tokenizer.json
// (tokenizer type "hf_bpe"), in its two styles: byte-level, as GPT-2,
// Llama-3 and Qwen2 ship it, and SentencePiece-style, as Llama 2, Mistral and
// TinyLlama ship it (Metaspace "▁" for spaces, byte fallback).
//
// Encoding, as the `tokenizers` library does it for these files:
//   1. the added tokens (added_tokens: "<|endoftext|>", "<|begin_of_text|>", ...)
//      are cut out of the text first, each one id: those with "normalized"
//      false (by default the special ones) from the whole text, then those
//      with "normalized" true from the pieces between, each pass leftmost
//      and then longest (datasets/added_tokens.h: linear in the text,
//      whatever the number of added tokens);
//   2. the rest is pre-tokenized: ByteLevel with use_regex (GPT-2's regex), or a
//      Split with GPT-2's, Llama-3's or Qwen2's regex followed by ByteLevel
//      without it (datasets/pretokenize_regex.h); add_prefix_space puts a
//      space first;
//   3. each piece's bytes become the byte-to-unicode characters of GPT-2
//      (printable bytes stand for themselves, the others for U+0100 upwards),
//      and the merges apply by rank, lowest first (with ignore_merges, a piece
//      that is a whole vocabulary entry is that entry).
// Ids are the file's own: this type does not follow Keystone's fixed
// specials at 0-3 (datasets/tokenizer.h); the end-of-text id is the one the
// import read from config.json (eos_token_id), or the added token named
// <|endoftext|>, <|end_of_text|> or </s>. The post-processor (Llama-3's
// <|begin_of_text|> in front) is not applied: callers add their own specials.
// Decoding is exact: added tokens decode to their text, so lossless() holds,
// except with add_prefix_space, whose added spaces decode too (" x" for "x"),
// and for the SentencePiece style below.
//
// SentencePiece-style (model.byte_fallback, or a Metaspace pre-tokenizer or
// decoder): steps 1 and 3 as above, but between them each piece is
// normalized (a normalizer of Prepend "▁" and Replace " " -> "▁", applied in
// the file's order: Llama 2's), or pre-tokenized by Metaspace (spaces to
// "▁", "▁" put first by prepend_scheme always, or first for the text's first
// piece only, unless it starts with one; split: cut before each "▁"), and
// the pieces' characters are the BPE's first symbols: a character not in
// model.vocab becomes its UTF-8 bytes' "<0xAB>" tokens (byte_fallback), else
// model.unk_token (consecutive ones fused into one with fuse_unk). Merges
// then apply by rank, lowest first and leftmost among equals, in O(n log n)
// per piece (a piece may be a whole line here). Decoding turns "▁" into a
// space and byte tokens into their bytes (where the decoder has ByteFallback;
// else into their text, "<0x0A>", as the tokenizers library does), then drops
// the text's first space where the decoder says so (Strip, or Metaspace with a
// prepend_scheme).
//
// Saved form: {"type": "hf_bpe", "eos_id": N, "tokenizer": <the tokenizer.json object>}.
// Anything this does not do (another model type, another normalizer,
// another regex, stripping added tokens) is refused with the key named.
//
// Memory: a tokenizer.json is read as a stream (nlohmann's SAX interface),
// and its vocabulary, merges and added tokens go straight into the
// tokenizer's own tables; only the rest (a few settings) becomes a JSON tree,
// and the file is written back from the tables (the reader, the added tokens
// and Metaspace are datasets/hf_json.h's, shared with hf_unigram). Holding the whole file as a
// tree (twice, while loading) took 1.44 GB for a 224 MB file of long tokens,
// 24 times the file for short ones; now 0.45 GB. At most kMaxAddedTokens added
// tokens of at most kMaxAddedTokenBytes in all (13 bytes a byte in their automaton).
// Not here: Keystone's own BPE (datasets/bpe.h), training (these come trained).
#pragma once

#include <array>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "datasets/hf_json.h"
#include "datasets/pretokenize_regex.h"
#include "datasets/tokenizer.h"

namespace ks::data {

// GPT-2's bytes_to_unicode: the character (UTF-8) each byte stands for in a
// byte-level tokenizer.json; and bytes written as those characters.
const std::array<std::string, 256>& gpt2_byte_chars();
std::string byte_level_text(std::string_view bytes);

class HfBpeTokenizer : public Tokenizer {
 public:
  // From a parsed tokenizer.json (its vocabulary, merges and added tokens are
  // moved out of it as they are read); `eos_id` < 0: found by name as above
  // (or none). Errors name `where` and the key.
  HfBpeTokenizer(nlohmann::json tokenizer_json, const std::string& where, int64_t eos_id = -1);

  std::string type() const override { return "hf_bpe"; }
  int64_t vocab_size() const override { return int64_t(bytes_.size()); }  // the largest id + 1
  std::vector<int64_t> encode(std::string_view text) const override;
  std::string decode(const std::vector<int64_t>& ids) const override;
  bool has_id(int64_t id) const override { return id >= 0 && id < vocab_size() && assigned_[size_t(id)]; }
  std::string token(int64_t id) const override;
  // Byte-level: exact unless add_prefix_space adds a space. SentencePiece-
  // style: never, since decoding turns a literal "▁" in the text into a
  // space, and a character without a token (no byte token for it, or no
  // byte_fallback) into model.unk_token.
  bool lossless() const override { return !prefix_space_ && !sp_; }
  std::string to_json() const override;  // written from the tables, vocabulary before merges
  int64_t eos_id() const override { return eos_; }
  nlohmann::json hf_json() const override { return tokenizer_json(); }  // it is one already
  std::string hf_refusal() const override { return ""; }

  // The tokenizer.json object it was built from (what export writes back),
  // rebuilt from the tables: equal to the file's, as JSON values.
  nlohmann::json tokenizer_json() const;
  // The id of a token's text (vocabulary entry or added token), or -1.
  int64_t id_of(const std::string& token_text) const;

 private:
  friend class HfBpeReader;  // hf_bpe.cpp: the streaming reader
  HfBpeTokenizer() = default;

  // The steps of loading, in this order: settings (everything but the three
  // tables), vocabulary entries, merges (after the whole vocabulary), added
  // tokens, finish (ids of added tokens, bytes, automata, eos).
  nlohmann::json& read_settings(nlohmann::json tokenizer, const std::string& at);  // keeps it, returns it
  void read_normalizers(const nlohmann::json& n, const std::string& name, const std::string& at);
  void read_sp_settings(const nlohmann::json& pre, const std::string& at);
  void check_tables(const std::string& at) const;  // model.vocab, model.merges, added_tokens: their types
  void add_vocab(const std::string& text, const nlohmann::json& id, const std::string& at);
  void add_merge(size_t rank, const nlohmann::json& merge, const std::string& at);
  // After the settings: byte-level, every entry's text to its bytes and every byte
  // has its token; SentencePiece-style, the byte tokens "<0xAB>" and the unk token.
  void check_bytes(const std::string& at);
  void finish(const std::string& at, int64_t eos_id);
  // Gives `id` the token `bytes`; what() names the entry in an error.
  template <class What> void assign(int64_t id, std::string bytes, const std::string& at, const What& what);
  void write_tokenizer(std::string& out) const;  // the tokenizer.json object as JSON text

  int64_t vocab_find(std::string_view bytes) const;  // the model.vocab id of these bytes, or -1
  void vocab_insert(int64_t id);
  void encode_piece(std::string_view piece, std::vector<int64_t>& out) const;
  void encode_sp_piece(std::string_view piece, std::vector<int64_t>& out) const;  // SentencePiece-style
  void merge_by_rank(std::vector<int64_t>& sym) const;                            // O(n log n), leftmost first
  void sp_pieces(std::string_view part, bool first, std::vector<std::string>& out) const;
  bool sp_prepends() const {
    return sp_ && (normalize_prepend_ || (metaspace_ && meta_.prepend != hf::MetaPrepend::Never));
  }
  // A token's text in the file (what the vocabulary's keys are) <-> bytes_.
  std::optional<std::string> key_of(std::string_view text) const;
  std::string text_of(int64_t id) const;

  nlohmann::json settings_;            // the tokenizer.json less model.vocab, model.merges and added_tokens (emptied)
  std::vector<std::string> bytes_;     // id -> the bytes it decodes to
  std::vector<bool> assigned_;         // id -> whether the file gives it a token
  std::vector<bool> in_vocab_;         // id -> whether model.vocab gives it (its text: bytes_ as byte characters)
  std::vector<uint64_t> vocab_index_;  // open addressing over model.vocab's ids by bytes_ (hf_bpe.cpp)
  size_t vocab_count_ = 0;
  struct Merge {
    int64_t rank, id;
  };
  std::unordered_map<uint64_t, Merge> merges_;  // (left << 32 | right) -> rank, result
  std::vector<uint64_t> merge_list_;            // model.merges in order, as (left << 32 | right)
  std::vector<bool> merge_is_pair_;             // [left, right] rather than "left right"
  int64_t byte_id_[256];                        // byte -> id of its one-character token
  hf::AddedTokens added_;                       // added_tokens in order
  std::optional<SplitPattern> pattern_;         // none: the text is one piece
  bool prefix_space_ = false, ignore_merges_ = false;
  int64_t eos_ = -1;
  // SentencePiece-style: bytes_ holds each vocabulary entry's text as the file
  // gives it ("▁the", "<0x0A>"); decoding makes spaces and bytes of it.
  bool sp_ = false, byte_fallback_ = false, fuse_unk_ = false;
  bool texts_are_bytes_ = false;  // byte-level: bytes_ converted from the file's text (check_bytes)
  std::vector<std::pair<int, std::string>> normalizers_;  // in order: (0 Prepend | 1 Replace " "->content, text)
  bool normalize_prepend_ = false;
  bool metaspace_ = false;  // a Metaspace pre-tokenizer, with meta_'s settings
  hf::Metaspace meta_;
  bool strip_first_space_ = false;  // the decoder drops the decoded text's first space
  bool decode_bytes_ = false;       // the decoder has ByteFallback: "<0xAB>" decodes to the byte
  int64_t unk_ = -1;
  std::vector<int16_t> byte_of_id_;  // id -> the byte of its "<0xAB>" token, or -1
};

namespace detail {
// What `text` is, read as a stream without building it: a saved hf_bpe
// tokenizer ({"type": "hf_bpe", ...}), a raw tokenizer.json (no "type", a
// "model"), or neither (also for text that is not JSON: parse it to report).
enum class HfBpeForm { None, Saved, Raw };
HfBpeForm hf_bpe_form(std::string_view text);
// Reads either form as a stream; errors name `where` ("load_tokenizer: file").
std::unique_ptr<Tokenizer> hf_bpe_tokenizer_from_text(std::string_view text, HfBpeForm form, const std::string& where);
}  // namespace detail

}  // namespace ks::data
