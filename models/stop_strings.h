// models/stop_strings.h — ending generation at a stop string. Models know
// token ids, not text, so the caller hands over its tokenizer's decoding as a
// function; a row stops once the decoded text of its generated tokens (the
// prompt excluded) contains one of the strings, and its text is cut before
// the earliest one.
//
// Matching is on decoded text, not on token ids, so a stop string may span
// several tokens or end inside one: with a word tokenizer "the end" matches
// two tokens joined by the decoder's space, and with a character or byte
// tokenizer any substring matches. A stop string that the tokenizer cannot
// produce (e.g. text its decoder never emits) never stops anything. The cut
// is on the text, so the tokens of a stopped row still include the token that
// completed the stop string (and, in a batch, whatever it was fed afterwards).
//
// A stop string typed on a command line is read with unescape_stop_string
// first, so `--stop "\n"` means a newline, as it reads.
//
// Not here: sampling (models/sampling.h), the decoding loop (DecoderLM::generate).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace ks::models {

struct StopStrings {
  std::vector<std::string> strings;                                      // none empty
  std::function<std::string(const std::vector<int64_t>& ids)> decode{};  // the generated ids -> text

  bool empty() const { return strings.empty(); }
  // The offset of the earliest stop string in text, or std::string::npos.
  size_t find(const std::string& text) const;
  // text up to (excluding) the earliest stop string; the whole text without one.
  std::string cut(const std::string& text) const;
  // Throws unless every string is non-empty and decode is set when there are strings.
  void check() const;
};

// The text with C-style escapes replaced: \n \t \r \\ \" \' \xHH (one byte,
// two hex digits: \x00 is a NUL) and \uXXXX (a code point, four hex digits,
// as UTF-8).
// Throws ks::Error naming the escape and its offset for anything else: an
// unknown letter, a backslash at the end, too few hex digits, a surrogate.
std::string unescape_stop_string(std::string_view text);

}  // namespace ks::models
