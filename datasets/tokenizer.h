// datasets/tokenizer.h — the interface every tokenizer implements, the
// special tokens they all share, the byte-level tokenizer, and JSON save/load
// for all of them.
//
// Every Keystone vocabulary starts with the same four special tokens at fixed
// ids, so a model config can hard-code them (models/config.h: pad 0, bos 1,
// eos 2) whatever the tokenizer:
//   0 <pad>   1 <bos>   2 <eos>   3 <unk>
// and the tokenizer's own symbols follow from id 4 (kNumSpecial).
//
// The concrete tokenizers: ByteTokenizer (here), CharTokenizer and
// WordTokenizer (datasets/vocab.h), BpeTokenizer (datasets/bpe.h), and
// HfBpeTokenizer (datasets/hf_bpe.h, a Hugging Face tokenizer.json with the
// file's own ids, so not the fixed specials: eos_id() says its end of text). A saved
// tokenizer is one JSON object {"type": ..., "specials": [...], ...} that
// load_tokenizer turns back into the right class.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/registry.h"  // KS_CONCAT

namespace ks::data {

inline constexpr int64_t kPadId = 0;
inline constexpr int64_t kBosId = 1;
inline constexpr int64_t kEosId = 2;
inline constexpr int64_t kUnkId = 3;
inline constexpr int64_t kNumSpecial = 4;
// The most entries a loaded tokenizer may list (merges, chars or words):
// 2^20, four times the largest vocabularies in use; and the largest
// tokenizer file read.
inline constexpr int64_t kMaxVocabSize = int64_t(1) << 20;
inline constexpr uint64_t kMaxTokenizerFileBytes = uint64_t(256) << 20;
// {"<pad>", "<bos>", "<eos>", "<unk>"}, indexed by id.
const std::vector<std::string>& special_tokens();

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  virtual std::string type() const = 0;    // "byte", "char", "word", "bpe" or "hf_bpe"
  virtual int64_t vocab_size() const = 0;  // specials included
  // Never emits pad, bos or eos (callers add those); emits unk only for text
  // outside a char/word vocabulary.
  virtual std::vector<int64_t> encode(std::string_view text) const = 0;
  // pad, bos and eos decode to nothing and unk to "<unk>"; an id outside
  // [0, vocab_size) throws (decode_known below skips such ids instead).
  virtual std::string decode(const std::vector<int64_t>& ids) const = 0;
  // True when decode takes the id: in [0, vocab_size), and for hf_bpe one
  // that its file gives a token (its ids may have gaps).
  virtual bool has_id(int64_t id) const { return id >= 0 && id < vocab_size(); }
  // The text of one id, for printing ("<eos>", "e", "the", " the").
  virtual std::string token(int64_t id) const = 0;
  // True when decode(encode(s)) == s for every string s (byte, bpe). Char is
  // lossless only on its own characters; word never (it normalises spaces).
  virtual bool lossless() const = 0;
  // The id that ends a text (between a text file's lines, where generation
  // stops): kEosId, except for a tokenizer with its own ids (hf_bpe); < 0: none.
  virtual int64_t eos_id() const { return kEosId; }
  // The whole tokenizer as one JSON object (see the file comment).
  virtual std::string to_json() const = 0;
  // Its exact Hugging Face tokenizer.json (datasets/hf_form.h): the same ids
  // for every text Hugging Face's tokenizers take; an Error saying why for a
  // tokenizer that has none.
  virtual nlohmann::json hf_json() const;
  // "" where hf_json() gives a form; else why not, naming the tokenizer
  // (cheap: `keystone train` warns with it at a run's start).
  virtual std::string hf_refusal() const;
  // The bytes save writes: a run records their hash to notice a tokenizer
  // file changed or damaged later (tools/train/data_setup.h).
  std::string file_text() const;
  void save(const std::filesystem::path& path) const;
};

// decode() of the ids the tokenizer has (has_id), skipping the others, as
// Hugging Face's decode skips ids outside its vocabulary: a model whose
// vocabulary is padded past its tokenizer's (an imported checkpoint's rounded
// vocab_size, or a config's larger model.vocab_size) can emit ids that no
// text belongs to. `skipped`, when given, is incremented once per skipped id.
std::string decode_known(const Tokenizer& tok, const std::vector<int64_t>& ids, int64_t* skipped = nullptr);

// Reads a file written by Tokenizer::save. Errors name the file and what is
// wrong with it (not a regular file, too large, not JSON or nested too deep,
// unknown type, bad specials, a bad field, a list over kMaxVocabSize).
std::unique_ptr<Tokenizer> load_tokenizer(const std::filesystem::path& path);
// The same from JSON text; `where` names its origin in errors.
std::unique_ptr<Tokenizer> tokenizer_from_json(const std::string& json_text, const std::string& where);

// Byte-level: id = kNumSpecial + byte, vocabulary 260, lossless for any bytes.
class ByteTokenizer : public Tokenizer {
 public:
  std::string type() const override { return "byte"; }
  int64_t vocab_size() const override { return kNumSpecial + 256; }
  std::vector<int64_t> encode(std::string_view text) const override;
  std::string decode(const std::vector<int64_t>& ids) const override;
  std::string token(int64_t id) const override;
  bool lossless() const override { return true; }
  std::string to_json() const override;
  nlohmann::json hf_json() const override;
  std::string hf_refusal() const override;
};

// What to build from a corpus: train_tokenizer's recipe, also the shape of a
// tokenizer section in a training config.
struct TokenizerOptions {
  std::string type = "byte";      // byte | char | word | bpe
  int64_t vocab_size = 0;         // the most ids, specials included; 0: no limit (char, word).
                                  // bpe: required, at least 260 (the bytes) + merges
  int64_t min_freq = 1;           // char/word: drop rarer symbols; bpe: stop merging below it
  bool lowercase = false;         // word only (ASCII letters)
  bool split_punctuation = true;  // word only: each ASCII punctuation mark is its own word
  // A tokenizer file used as it is instead of training one: Keystone's
  // tokenizer.json (from a run, or `keystone tokenize --tokenizer bpe:N`), or
  // a Hugging Face one (type hf_bpe: train on GPT-2's or Llama's vocabulary).
  std::string file;
};
// Builds a tokenizer from training text (ignored for "byte"), or loads
// options.file, whose type must be options.type.
std::unique_ptr<Tokenizer> train_tokenizer(const TokenizerOptions& options, const std::vector<std::string>& corpus);

// Whether a data section may name the type: a registered one, those
// train_tokenizer builds ("byte, char, word or bpe", as tokenizer_types()
// lists them for errors) and those that come trained ("hf_bpe": a run's
// tokenizer.json from keystone import).
bool is_tokenizer_type(const std::string& type);
std::string tokenizer_types();
std::vector<std::string> trainable_tokenizer_types();  // "byte", "char", "word", "bpe", then a plugin's

// A tokenizer type's descriptor: each registers itself from its own file
// (datasets/tokenizers/), a plugin's from the plugin (KS_REGISTER_TOKENIZER),
// so a new tokenizer edits no shared file.
struct TokenizerKind {
  // Its saved form back: the object {"type": ..., "specials": [...], ...}
  // (the specials checked already); `where` names the file in errors. Null
  // for a form read from the text itself (hf_bpe's streamed tokenizer.json).
  std::unique_ptr<Tokenizer> (*from_json)(const nlohmann::json& j, const std::string& where) = nullptr;
  // Built from training text by the recipe; null: it comes trained.
  std::unique_ptr<Tokenizer> (*train)(const TokenizerOptions& options,
                                      const std::vector<std::string>& corpus) = nullptr;
};
// `order` places it where errors and docs list the types.
bool register_tokenizer(const std::string& type, TokenizerKind kind, int order = 0);

}  // namespace ks::data

#define KS_REGISTER_TOKENIZER(type, ...) \
  static const bool KS_CONCAT(ks_tokenizer_registered_, __LINE__) = ::ks::data::register_tokenizer(type, __VA_ARGS__)
