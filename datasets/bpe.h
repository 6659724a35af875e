// datasets/bpe.h — byte-pair encoding over bytes (as GPT-2 does): the 256
// bytes are the base symbols (ids 4..259), and each learned merge of two
// symbols adds one id (260, 261, ... in the order they were learned), so any
// byte string encodes and decodes exactly.
//
// Text is first cut into chunks that merges never cross: a word (a run of
// letters, or of digits, or of other punctuation) with at most one leading
// space, or a run of whitespace. Training counts adjacent symbol pairs over
// the chunks and repeatedly merges the most frequent pair (ties: the pair of
// smaller ids); encoding applies the learned merges by rank, lowest first.
// Saved JSON holds the merges as [left id, right id] pairs.
//
// A merged token is at most kMaxTokenBytes long: each merge can double a
// token's length, so 500 merges in a tiny file would otherwise ask for 2^500
// bytes. Training never learns a longer merge; loading refuses one.
#pragma once

#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "datasets/tokenizer.h"

namespace ks::data {

class BpeTokenizer : public Tokenizer {
 public:
  static constexpr int64_t kFirstMerge = kNumSpecial + 256;
  static constexpr size_t kMaxTokenBytes = 1024;

  // Learns merges until the vocabulary has vocab_size ids or the most
  // frequent pair occurs fewer than min_freq times.
  static BpeTokenizer train(const std::vector<std::string>& corpus, int64_t vocab_size, int64_t min_freq = 2);
  // merges[i] = (left, right) makes id kFirstMerge + i; both must be smaller
  // ids, and their bytes together at most kMaxTokenBytes.
  explicit BpeTokenizer(std::vector<std::pair<int64_t, int64_t>> merges);

  std::string type() const override { return "bpe"; }
  int64_t vocab_size() const override { return kFirstMerge + int64_t(merges_.size()); }
  std::vector<int64_t> encode(std::string_view text) const override;
  std::string decode(const std::vector<int64_t>& ids) const override;
  std::string token(int64_t id) const override;  // the bytes it stands for
  bool lossless() const override { return true; }
  std::string to_json() const override;
  nlohmann::json hf_json() const override;
  std::string hf_refusal() const override;
  const std::vector<std::pair<int64_t, int64_t>>& merges() const { return merges_; }

  // The chunks merges never cross (see the file comment); they concatenate to text.
  static std::vector<std::string_view> pretokenize(std::string_view text);

 private:
  // Applies the merges to one chunk's symbols, appending the result to out.
  void encode_chunk(std::string_view chunk, std::vector<int64_t>& out) const;
  std::vector<std::pair<int64_t, int64_t>> merges_;
  std::unordered_map<uint64_t, int64_t> rank_;  // (left << 32 | right) -> merge index
  std::vector<std::string> bytes_;              // id -> the bytes it decodes to
};

}  // namespace ks::data
