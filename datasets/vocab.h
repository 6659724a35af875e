// datasets/vocab.h — tokenizers over a fixed table of symbols built from a
// corpus: CharTokenizer (Unicode characters) and WordTokenizer (words split at
// whitespace and punctuation). Symbols outside the table encode as <unk>.
//
// Both order their table by corpus frequency (most frequent first, ties by
// symbol) after the four specials, so ids are reproducible from the corpus.
// Neither learns merges: that is BpeTokenizer (datasets/bpe.h).
#pragma once

#include <array>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "datasets/tokenizer.h"

namespace ks::data {

// Characters are UTF-8 code points. A byte that does not start a valid UTF-8
// sequence becomes its own character, U+DC00 + byte (Python's "surrogateescape"),
// so any byte string survives encode/decode when its characters are known.
class CharTokenizer : public Tokenizer {
 public:
  // Every character of the corpus seen at least min_freq times; at most
  // max_vocab ids in all, specials included (0: no limit).
  static CharTokenizer build(const std::vector<std::string>& corpus, int64_t min_freq = 1, int64_t max_vocab = 0);
  // ids kNumSpecial, kNumSpecial + 1, ... in this order; no repeats.
  explicit CharTokenizer(std::vector<char32_t> chars);
  // From the characters of a string, in order of first appearance ("0123456789+").
  static CharTokenizer from_alphabet(std::string_view alphabet);

  std::string type() const override { return "char"; }
  int64_t vocab_size() const override { return kNumSpecial + int64_t(chars_.size()); }
  std::vector<int64_t> encode(std::string_view text) const override;
  std::string decode(const std::vector<int64_t>& ids) const override;
  std::string token(int64_t id) const override;
  bool lossless() const override { return false; }
  std::string to_json() const override;  // "chars": [code points]
  nlohmann::json hf_json() const override;
  std::string hf_refusal() const override;
  const std::vector<char32_t>& chars() const { return chars_; }

 private:
  int64_t id_of(char32_t c) const;
  std::vector<char32_t> chars_;
  std::array<int64_t, 128> ascii_;  // id of each ASCII character (fast path), kUnkId if absent
  std::unordered_map<char32_t, int64_t> ids_;
};

// The code points of a UTF-8 string (invalid bytes escaped as above), and back.
std::vector<char32_t> utf8_decode(std::string_view text);
void utf8_append(std::string& out, char32_t c);
// Whether `text` is valid UTF-8 throughout (no byte would need an escape).
bool is_utf8(std::string_view text);

struct WordOptions {
  bool lowercase = false;         // ASCII letters only
  bool split_punctuation = true;  // each ASCII punctuation mark is its own word
};

// Words are maximal runs of non-space bytes, cut at ASCII punctuation when
// split_punctuation. decode joins words with single spaces, so it is lossy.
class WordTokenizer : public Tokenizer {
 public:
  // From the words of a corpus (split as encode does): those seen at least
  // min_freq times; at most max_vocab ids in all, specials included (0: no limit).
  static WordTokenizer build(const std::vector<std::string>& corpus, WordOptions options = {}, int64_t min_freq = 1,
                             int64_t max_vocab = 0);
  // From word counts of text that is already split (e.g. a tagged corpus);
  // words are lowercased first when options.lowercase.
  static WordTokenizer from_counts(const std::map<std::string, int64_t>& counts, WordOptions options,
                                   int64_t min_freq = 1, int64_t max_vocab = 0);
  // ids kNumSpecial, ... in this order; no repeats, no empty words.
  WordTokenizer(std::vector<std::string> words, WordOptions options);

  std::string type() const override { return "word"; }
  int64_t vocab_size() const override { return kNumSpecial + int64_t(words_.size()); }
  std::vector<int64_t> encode(std::string_view text) const override;
  std::string decode(const std::vector<int64_t>& ids) const override;
  std::string token(int64_t id) const override;
  bool lossless() const override { return false; }
  std::string to_json() const override;  // "words": [...], "lowercase", "split_punctuation"
  nlohmann::json hf_json() const override;
  std::string hf_refusal() const override;

  // The words of text as encode sees them (lowercased when asked).
  std::vector<std::string> split(std::string_view text) const;
  // The id of one word (lowercased when asked), kUnkId if unknown.
  int64_t id(std::string word) const;
  const std::vector<std::string>& words() const { return words_; }
  const WordOptions& options() const { return options_; }

 private:
  std::vector<std::string> words_;
  WordOptions options_;
  std::unordered_map<std::string, int64_t> ids_;
};

}  // namespace ks::data
