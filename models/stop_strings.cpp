// models/stop_strings.cpp — finding and cutting at the earliest stop string,
// and reading the escapes of one typed on a command line.
#include "models/stop_strings.h"

#include <algorithm>

#include "core/error.h"
#include "core/utf8.h"

namespace ks::models {

size_t StopStrings::find(const std::string& text) const {
  size_t first = std::string::npos;
  for (const std::string& s : strings) first = std::min(first, text.find(s));
  return first;
}

std::string StopStrings::cut(const std::string& text) const {
  const size_t at = find(text);
  return at == std::string::npos ? text : text.substr(0, at);
}

void StopStrings::check() const {
  for (const std::string& s : strings) KS_CHECK(!s.empty(), "stop strings: a stop string must not be empty");
  KS_CHECK(strings.empty() || decode, "stop strings: a decode function is needed to match stop strings");
}

namespace {

// The value of `digits` hex digits at text[at...], or -1 when there are fewer.
int64_t hex_value(std::string_view text, size_t at, size_t digits) {
  if (at + digits > text.size()) return -1;
  int64_t v = 0;
  for (size_t i = at; i < at + digits; ++i) {
    const char c = text[i];
    const int d = c >= '0' && c <= '9'   ? c - '0'
                  : c >= 'a' && c <= 'f' ? c - 'a' + 10
                  : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                         : -1;
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}

}  // namespace

std::string unescape_stop_string(std::string_view text) {
  static constexpr const char* kKnown = "(known: \\n \\t \\r \\\\ \\\" \\' \\xHH \\uXXXX)";
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\\') {
      out += text[i];
      continue;
    }
    KS_CHECK(i + 1 < text.size(), "a backslash ends the text at offset ", i, " (write \\\\ for a backslash) ", kKnown);
    const char c = text[++i];
    switch (c) {
      case 'n': out += '\n'; break;
      case 't': out += '\t'; break;
      case 'r': out += '\r'; break;
      case '\\':
      case '"':
      case '\'': out += c; break;
      case 'x': {
        const int64_t v = hex_value(text, i + 1, 2);
        KS_CHECK(v >= 0, "escape \\x at offset ", i - 1, " needs two hex digits, got '",
                 text.substr(i + 1, std::min<size_t>(2, text.size() - i - 1)), "'");
        out += char(v);
        i += 2;
        break;
      }
      case 'u': {
        const int64_t v = hex_value(text, i + 1, 4);
        KS_CHECK(v >= 0, "escape \\u at offset ", i - 1, " needs four hex digits, got '",
                 text.substr(i + 1, std::min<size_t>(4, text.size() - i - 1)), "'");
        KS_CHECK(v < 0xD800 || v > 0xDFFF, "escape \\u", text.substr(i + 1, 4), " at offset ", i - 1,
                 " is a UTF-16 surrogate, not a character");
        append_utf8(out, char32_t(v));
        i += 4;
        break;
      }
      default: throw Error(str("unknown escape \\", std::string(1, c), " at offset ", i - 1, " ", kKnown));
    }
  }
  return out;
}

}  // namespace ks::models
