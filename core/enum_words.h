// core/enum_words.h — an enum's words (in configs, environment variables and
// reports) written once, as a table, and read both ways: the word of a value
// and the value of a word. A setting that has words keeps its own table beside
// it (core/cpu_features.cpp, core/matmul_precision.cpp, datasets/dataset.cpp).
// Not here: the error a caller throws for an unknown word (its text names the
// setting, so it stays with the caller).
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace ks {

template <class E> struct EnumWord {
  E value;
  const char* word;
};

// The word of `value`, or `otherwise` for a value the table lacks.
template <class E, size_t N>
constexpr const char* word_of(E value, const EnumWord<E> (&words)[N], const char* otherwise) {
  for (const EnumWord<E>& w : words)
    if (w.value == value) return w.word;
  return otherwise;
}

// The value whose word is `word`, or nothing.
template <class E, size_t N> constexpr std::optional<E> value_of(std::string_view word, const EnumWord<E> (&words)[N]) {
  for (const EnumWord<E>& w : words)
    if (word == w.word) return w.value;
  return std::nullopt;
}

}  // namespace ks
