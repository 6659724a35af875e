// nn/user_input.h — the one way Keystone takes in user files and user JSON:
// regular files only, of a bounded size (the guard of core/user_file.h,
// re-exported here); JSON of a bounded nesting depth with each key once per
// object; error messages of a bounded length that name the file or key and
// never leak nlohmann's internals ("[json.exception.parse_error.101]").
//
// Why here: nn is the lowest layer that uses nlohmann (safetensors headers),
// and adding nlohmann to core would put it into every layer's build; the file
// guard itself is in core, where the plugin loader reads user-named files
// too. The layers above (models, datasets, tools) call these instead of
// std::ifstream and json::parse, so every reader gets the same limits and the
// same messages. Not here: what any file means (its own reader checks that).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#include "core/error.h"
#include "core/user_file.h"

namespace ks::nn {

// Nested arrays/objects allowed in user JSON. Keystone's deepest file (a
// training config) nests 3 levels; nlohmann copies, compares and prints
// values recursively, so depth 200,000 would overflow the stack there.
inline constexpr int kMaxJsonDepth = 64;
// Length of a JSON value quoted in an error message (json_excerpt).
inline constexpr size_t kExcerptChars = 80;

// The one guard of user-named files (core/user_file.h), here too because
// every reader of user JSON reads its file first.
using ks::check_regular_file;
using ks::read_regular_file;

// Parses user JSON. Nesting deeper than max_depth is rejected while parsing,
// before the value is built, and so is a key that appears twice in one object
// (nlohmann would keep the last silently: a config's second "d_model", a
// checkpoint's second tensor of one name). Errors start with `what` (a file
// name, "--set train.steps"): "what: not valid JSON: line 1, column 5: syntax
// error ...", "what: JSON nested deeper than 64 levels of arrays and objects"
// or "what: key model.d_model appears twice" (array elements as "layers[2]").
nlohmann::json parse_json(std::string_view text, const std::string& what, int max_depth = kMaxJsonDepth);
// As parse_json, but text that is not JSON gives a discarded value (as
// json::parse(text, nullptr, false) does), for callers with their own message
// or a fallback. Too deep or a repeated key still throws: it is JSON, just
// not what Keystone accepts, and "not JSON" would hide why it was refused.
nlohmann::json try_parse_json(std::string_view text, const std::string& what, int max_depth = kMaxJsonDepth);

// `v` as JSON text for an error message, cut to about max_chars with "..."
// (a 100 MB value must not make a 100 MB message). Never throws for bytes
// that are not UTF-8 (they print as U+FFFD).
std::string json_excerpt(const nlohmann::json& v, size_t max_chars = kExcerptChars);

// Reads `key` of the object `j` into `out` when present (else leaves `out`,
// the default); a value of another type is "config: <where><key>: expected
// an integer, got 10.5" (`where`: the key's dotted prefix, "model.attention.").
// The type is checked before get<T>: nlohmann would truncate 10.5 to 10, and
// casting 1e30 to an integer is undefined behaviour. Every integer of a model
// config is a size or an id: within 32 bits, so the product of two
// (heads * head_dim, 4 * d_model) never overflows.
template <class T>
void read_json_key(const nlohmann::json& j, const std::string& key, T& out, const std::string& where) {
  if (!j.contains(key)) return;
  const nlohmann::json& v = j.at(key);
  const bool ok = std::is_same_v<T, bool>          ? v.is_boolean()
                  : std::is_same_v<T, std::string> ? v.is_string()
                  : std::is_integral_v<T>          ? v.is_number_integer()
                                                   : v.is_number();
  KS_CHECK(ok, "config: ", where, key, ": expected ",
           std::is_same_v<T, bool>          ? "true or false"
           : std::is_same_v<T, std::string> ? "a string"
           : std::is_integral_v<T>          ? "an integer"
                                            : "a number",
           ", got ", json_excerpt(v));
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>)
    KS_CHECK(v.is_number_unsigned() ? v.get<uint64_t>() <= uint64_t(INT32_MAX) : v.get<int64_t>() >= INT32_MIN,
             "config: ", where, key, ": ", json_excerpt(v), " is out of range (sizes and ids fit in 32 bits)");
  out = v.get<T>();
}

}  // namespace ks::nn
