// datasets/pretokenize_regex.h — the pre-tokenizer regexes of byte-level BPE
// tokenizers, matched by hand: GPT-2's (its ByteLevel pre-tokenizer, and a
// Split with the same pattern)
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// Llama-3's Split
//   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
// and Qwen2's Split (Qwen2, Qwen2.5), Llama-3's with one digit a piece
//   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
// Each alternative is a small function of the code points at a position,
// with the regex engine's leftmost-first, greedy-with-backtracking meaning
// worked out in pretokenize_regex.cpp; tests/interop/ compares the result
// with Python's re engine on the same patterns. Exactly these three patterns,
// without a regex engine (Debian's PCRE2 and Oniguruma do \p{L}, but were not
// worth a dependency for three fixed patterns): any other pattern is refused
// (known_pattern returns nullopt).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ks::data {

enum class SplitPattern { Gpt2, Llama3, Qwen2 };

// The pattern whose regex text (as tokenizer.json spells it) is `regex`, or nullopt.
std::optional<SplitPattern> known_pattern(const std::string& regex);
// The regex text of a pattern (for saving and messages).
const char* pattern_text(SplitPattern p);

// The pieces of `text`: every match of the pattern, and the gaps between them
// (a Split with behaviour "Isolated"), in order; they concatenate to `text`.
std::vector<std::string_view> split_by_pattern(std::string_view text, SplitPattern p);

}  // namespace ks::data
