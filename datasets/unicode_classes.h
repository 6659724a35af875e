// datasets/unicode_classes.h — the few Unicode properties a byte-level BPE
// pre-tokenizer regex asks about (\p{L}, \p{N}, \s), and UTF-8 decoding into
// code points that keep their byte spans.
//
// The category tables (unicode_classes.cpp) are Unicode 14.0's, generated with
// Python's unicodedata (the reference the tokenizer tests compare against):
// \p{L} is every general category L* (Lu Ll Lt Lm Lo), \p{N} every N* (Nd Nl No).
// \s is the White_Space property, as Oniguruma and Rust's regex read it.
// Not here: the patterns themselves (datasets/pretokenize_regex.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace ks::data::unicode {

bool is_letter(char32_t c);      // \p{L}
bool is_number(char32_t c);      // \p{N}
bool is_whitespace(char32_t c);  // \s (White_Space)

// One decoded code point and where its bytes are in the text.
struct CodePoint {
  char32_t c;
  size_t begin, end;  // byte offsets: text[begin, end)
};
// The text's code points. A byte that does not start a valid UTF-8 sequence
// becomes a code point of its own (U+FFFD's class: none of the three), so any
// bytes decode and the spans still tile the text.
std::vector<CodePoint> decode_utf8(std::string_view text);

}  // namespace ks::data::unicode
