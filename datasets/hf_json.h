// datasets/hf_json.h — internal: the pieces of reading a Hugging Face
// tokenizer.json that its model types share (datasets/hf_bpe.h for "BPE",
// datasets/hf_unigram.h for "Unigram"), so each model's reader holds only
// what is its own:
//   - strict key reading (text_or, flag_or): a value of the wrong type is an
//     error naming the file and the key, never nlohmann's own message;
//   - the Metaspace pre-tokenizer ("▁" for spaces, prepend_scheme, split) and
//     the SentencePiece decoders (Metaspace, or a Sequence of Replace "▁" ->
//     " ", ByteFallback, Fuse, Strip);
//   - the added tokens (added_tokens): their checks, the two passes that cut
//     them out of a text before the model sees it ("normalized": false ones
//     from the raw text, true ones after the normalizer), writing them back;
//   - the streaming read (nlohmann's SAX interface) that hands model.vocab,
//     model.merges and added_tokens to the model's reader entry by entry and
//     builds a JSON tree of the rest only (hf_bpe.h: why);
//   - the registry of model types other than BPE (HfModelKind): a
//     tokenizer.json whose model.type is registered, or a saved tokenizer of
//     its saved type, is read by that kind; anything else by hf_bpe, which
//     names what it refuses.
// Not part of the public API (keystone.h does not include it). Not here:
// what a model does with its tables (the readers), Keystone's own
// tokenizers' forms (datasets/hf_form.h).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "datasets/added_tokens.h"
#include "datasets/tokenizer.h"

namespace ks::data {
// At most this many added tokens, of at most this many bytes in all (13
// bytes a byte in their automaton).
inline constexpr int64_t kMaxAddedTokens = kMaxVocabSize;
inline constexpr size_t kMaxAddedTokenBytes = size_t(16) << 20;
}  // namespace ks::data

namespace ks::data::hf {

using json = nlohmann::json;

inline const std::string kMetaspace = "\u2581";  // "▁", SentencePiece's space

// The names an end-of-text token goes by, in the order a tokenizer looks for
// one when none is given (GPT-2's, Llama-3's, SentencePiece's).
inline const char* const kEosNames[] = {"<|endoftext|>", "<|end_of_text|>", "</s>"};

// `text` with every `from` (non-empty) replaced by `to`, left to right.
std::string replaced(std::string_view text, std::string_view from, std::string_view to);
// The length of the UTF-8 character starting at s[i]: 1 for a byte that
// starts none (it is then a character of its own, as byte fallback sees it).
size_t char_length(std::string_view s, size_t i);

bool is_null_or_absent(const json& j, const char* k);
// obj[key] (`obj` an object, `path` its place: "model.") when present and not
// null, else `fallback`; a value of another type is an error naming the file
// (`at`) and the key.
std::string text_or(const json& obj, const char* key, const std::string& fallback, const std::string& at,
                    const std::string& path);
bool flag_or(const json& obj, const char* key, bool fallback, const std::string& at, const std::string& path);
// nlohmann's message without its "[json.exception...] parse error at " prefix, cut short.
std::string plain_message(const char* what);

// ---- Metaspace and the SentencePiece decoders --------------------------------------

enum class MetaPrepend { Never, First, Always };
struct Metaspace {
  MetaPrepend prepend = MetaPrepend::Always;
  bool split = true;
};
// A Metaspace object (pre-tokenizer or decoder) named `name`: replacement
// "▁" only; prepend_scheme, or the older add_prefix_space.
Metaspace read_metaspace(const json& m, const std::string& name, const std::string& at);
// Metaspace on one part: spaces to "▁", "▁" put first (always, or for the
// text's first part: `first`) unless it starts with one, cut before each "▁"
// with split ("▁" goes with what follows it).
void metaspace_pieces(std::string_view part, bool first, const Metaspace& m, std::vector<std::string>& out);

// What a SentencePiece decoder does beyond "▁" -> " ".
struct SpDecoder {
  bool strip_first_space = false;  // Strip of one leading space, or Metaspace with a prepend_scheme
  bool decode_bytes = false;       // ByteFallback: "<0xAB>" decodes to its byte, else to its text
};
// The file's "decoder" (not null): Metaspace, or a Sequence of Replace
// "▁" -> " ", ByteFallback, Fuse and Strip.
SpDecoder read_sp_decoder(const json& d, const std::string& at);

// ---- added tokens --------------------------------------------------------------------

class AddedTokens {
 public:
  struct Added {
    std::string content;
    int64_t id;
    uint16_t flags;  // per key of single_word, lstrip, rstrip, normalized, special: bit 2k present, bit 2k+1 true
    json more;       // its other keys (an object), or null
  };

  // Checks added_tokens[index] and keeps it; its id is the model reader's to
  // check against its vocabulary. Stripping and whole-word tokens are refused.
  void add(size_t index, const json& a, const std::string& at);
  // The automata, after the last add(): "normalized" false (the default for a
  // special token) in the first pass, true in the second.
  void build();

  const std::vector<Added>& list() const { return added_; }
  // The id of the first added token whose content is `text`, or -1.
  int64_t id_of(std::string_view text) const;
  // Encodes `text`: each added token is its id; `plain(part, first)` encodes
  // each stretch between them (`first`: it starts the text), after
  // `normalize` (when set: the model's normalizer, for a non-empty stretch
  // between "normalized": false tokens, before the "normalized": true ones
  // are looked for in its output).
  void encode(std::string_view text, const std::function<std::string(std::string_view)>& normalize,
              const std::function<void(std::string_view, bool)>& plain, std::vector<int64_t>& ids) const;
  // added_tokens[i] as its object: id, content, the flags it was given, its other keys.
  json to_json(size_t i) const;

 private:
  std::vector<Added> added_;
  size_t bytes_ = 0;                               // their contents' bytes
  AddedTokenMatcher split_, split_normalized_;     // the "normalized": false ones, then the true ones
  std::vector<int32_t> split_of_, normalized_of_;  // their pattern -> index into added_
};

// ---- the streaming read ------------------------------------------------------------------

// A model's reader: where a tokenizer.json's settings and its three tables'
// entries go, one by one, and what finishes the tokenizer. `key` is
// model.vocab's key for an object vocabulary ("" for a list's element).
// Streamed (read_stream), a table entry may come before the settings and its
// Error is kept (the first per table) and raised after the settings' (HfStream).
class TableSink {
 public:
  virtual ~TableSink() = default;
  // Keeps the tokenizer.json object (tables emptied, or still full from a
  // tree) and reads its settings; returns the kept object.
  virtual json& settings(json tokenizer, const std::string& at) = 0;
  virtual void vocab_entry(size_t index, const std::string& key, const json& value, const std::string& at) = 0;
  virtual void merge(size_t rank, const json& m, const std::string& at) = 0;  // after the whole vocabulary
  virtual void added(size_t index, const json& a, const std::string& at) = 0;
  // After everything; `eos_id` < 0: none given.
  virtual void finish(const std::string& at, int64_t eos_id) = 0;
};

struct HfStream {
  json root;  // the file less the tables (left as empty lists or objects, so their type can be checked)
  std::string vocab_error, merges_error, added_error;  // the first of each table's errors
};
// Reads `text` (a raw tokenizer.json, or with saved_form {"type": ..., "tokenizer": {...}})
// as a stream; errors name `what` ("load_tokenizer: FILE").
HfStream read_stream(std::string_view text, bool saved_form, TableSink& sink, const std::string& what);
// The whole load from text: read_stream, the settings (saved: the "tokenizer"
// object, and "eos_id"), the tables' errors, finish. Errors name `where`.
void load_stream(std::string_view text, bool saved_form, TableSink& sink, const std::string& where);
// The same from a parsed tokenizer.json: settings first, then the tables
// (emptied from the kept object as they are read, so it never holds them twice).
void load_tree(json tokenizer, TableSink& sink, const std::string& where, int64_t eos_id);

// ---- model types -------------------------------------------------------------------------

// A tokenizer.json model type read by a tokenizer of its own (not hf_bpe).
struct HfModelKind {
  std::string saved_type;  // the saved form's "type" ("hf_unigram")
  // Reads the text (saved: the saved form); `where` names it in errors.
  std::unique_ptr<Tokenizer> (*from_text)(std::string_view text, bool saved, const std::string& where) = nullptr;
};
// From the kind's own file, beside its tokenizer's KS_REGISTER_TOKENIZER.
bool register_hf_model(const std::string& model_type, HfModelKind kind);
const HfModelKind* hf_model(const std::string& model_type);        // or nullptr
const HfModelKind* hf_model_saved(const std::string& saved_type);  // or nullptr

}  // namespace ks::data::hf
