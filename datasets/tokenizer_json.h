// datasets/tokenizer_json.h — internal: the JSON reading and writing shared
// by the tokenizer classes, with errors that name the file and the field.
// Not part of the public API (keystone.h does not include it), so the
// nlohmann headers stay out of users' builds.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "core/error.h"
#include "datasets/bpe.h"
#include "datasets/tokenizer.h"
#include "datasets/vocab.h"
#include "nn/user_input.h"

namespace ks::data::detail {

using json = nlohmann::json;

// {"type": type, "specials": [...]}: the head of every saved tokenizer.
inline json tokenizer_head(const std::string& type) { return json{{"type", type}, {"specials", special_tokens()}}; }

// Serialises; a vocabulary holding bytes that are not UTF-8 cannot be JSON text.
inline std::string dump_tokenizer(const json& j) {
  try {
    return j.dump(1);
  } catch (const json::exception& e) {
    throw Error(str("tokenizer save: the vocabulary cannot be written as JSON (", e.what(), ")"));
  }
}

// The value at `key`, converted to T; errors name `where` and the key.
template <class T> T field(const json& j, const char* key, const std::string& where) {
  KS_CHECK(j.contains(key), "load_tokenizer: ", where, ": missing field \"", key, "\"");
  try {
    return j.at(key).get<T>();
  } catch (const json::exception&) {
    throw Error(
        str("load_tokenizer: ", where, ": field \"", key, "\" has the wrong type: ", nn::json_excerpt(j.at(key))));
  }
}

// The list at `key` (merges, chars, words), at most kMaxVocabSize long, so a
// file cannot make a loader build a vocabulary of any size it likes.
inline const json& entries(const json& j, const char* key, const std::string& where) {
  KS_CHECK(j.contains(key), "load_tokenizer: ", where, ": missing field \"", key, "\"");
  const json& list = j.at(key);
  KS_CHECK(list.is_array(), "load_tokenizer: ", where, ": field \"", key,
           "\" has the wrong type: ", nn::json_excerpt(list));
  KS_CHECK(list.size() <= size_t(kMaxVocabSize), "load_tokenizer: ", where, ": field \"", key, "\" holds ", list.size(),
           " entries, over the vocabulary limit of ", kMaxVocabSize);
  return list;
}

// Each class's own fields; the head ("type", "specials") is checked by the caller.
CharTokenizer char_tokenizer_from_json(const json& j, const std::string& where);
WordTokenizer word_tokenizer_from_json(const json& j, const std::string& where);
BpeTokenizer bpe_tokenizer_from_json(const json& j, const std::string& where);

}  // namespace ks::data::detail
