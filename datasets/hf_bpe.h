// datasets/hf_bpe.h — the byte-level BPE tokenizer of a Hugging Face
// tokenizer.json, as GPT-2 and Llama-3 ship it (tokenizer type "hf_bpe").
//
// Encoding, as the `tokenizers` library does it for these files:
//   1. the added tokens (added_tokens: "<|endoftext|>", "<|begin_of_text|>", ...)
//      are cut out of the text first, leftmost and then longest, each one id;
//   2. the rest is pre-tokenized: ByteLevel with use_regex (GPT-2's regex), or a
//      Split with GPT-2's or Llama-3's regex followed by ByteLevel without it
//      (datasets/pretokenize_regex.h); add_prefix_space puts a space first;
//   3. each piece's bytes become the byte-to-unicode characters of GPT-2
//      (printable bytes stand for themselves, the others for U+0100 upwards),
//      and the merges apply by rank, lowest first (with ignore_merges, a piece
//      that is a whole vocabulary entry is that entry).
// Ids are the file's own: this type does not follow Keystone's fixed
// specials at 0-3 (datasets/tokenizer.h); the end-of-text id is the one the
// import read from config.json (eos_token_id), or the added token named
// <|endoftext|>, <|end_of_text|> or </s>. The post-processor (Llama-3's
// <|begin_of_text|> in front) is not applied: callers add their own specials.
// Decoding is exact: added tokens decode to their text, so lossless() holds.
//
// Saved form: {"type": "hf_bpe", "eos_id": N, "tokenizer": <the tokenizer.json object>}.
// Anything this does not do (another model type, a normalizer, byte fallback,
// another regex, stripping added tokens) is refused with the key named.
// Not here: Keystone's own BPE (datasets/bpe.h), training (these come trained).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "datasets/pretokenize_regex.h"
#include "datasets/tokenizer.h"

namespace ks::data {

class HfBpeTokenizer : public Tokenizer {
 public:
  // From a parsed tokenizer.json; `eos_id` < 0: found by name as above (or none).
  // Errors name `where` and the key.
  HfBpeTokenizer(nlohmann::json tokenizer_json, const std::string& where, int64_t eos_id = -1);

  std::string type() const override { return "hf_bpe"; }
  int64_t vocab_size() const override { return int64_t(bytes_.size()); }  // the largest id + 1
  std::vector<int64_t> encode(std::string_view text) const override;
  std::string decode(const std::vector<int64_t>& ids) const override;
  bool has_id(int64_t id) const override { return id >= 0 && id < vocab_size() && assigned_[size_t(id)]; }
  std::string token(int64_t id) const override;
  bool lossless() const override { return true; }
  std::string to_json() const override;
  int64_t eos_id() const override { return eos_; }

  // The tokenizer.json object it was built from (what export writes back).
  const nlohmann::json& tokenizer_json() const { return json_; }
  // The id of a token's text (vocabulary entry or added token), or -1.
  int64_t id_of(const std::string& token_text) const;

 private:
  void encode_piece(std::string_view piece, std::vector<int64_t>& out) const;

  nlohmann::json json_;
  std::unordered_map<std::string, int64_t> vocab_;  // byte-level text -> id
  struct Merge {
    int64_t rank, id;
  };
  std::unordered_map<uint64_t, Merge> merges_;          // (left << 32 | right) -> rank, result
  int64_t byte_id_[256];                                // byte -> id of its one-character token
  std::vector<std::string> bytes_;                      // id -> the bytes it decodes to
  std::vector<bool> assigned_;                          // id -> whether the file gives it a token
  std::vector<std::pair<std::string, int64_t>> added_;  // added tokens, longest first
  std::optional<SplitPattern> pattern_;                 // none: the text is one piece
  bool prefix_space_ = false, ignore_merges_ = false;
  int64_t eos_ = -1;
};

namespace detail {
// {"type": "hf_bpe", ...} as saved, or a raw tokenizer.json object (it has "model").
std::unique_ptr<Tokenizer> hf_bpe_tokenizer_from_json(const nlohmann::json& j, const std::string& where);
}  // namespace detail

}  // namespace ks::data
