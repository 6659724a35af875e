// core/utf8.h — appending one Unicode code point to a string as UTF-8, for
// every layer that turns code points into bytes (stop-string escapes, the
// byte-level BPE alphabet). Not here: decoding or validating UTF-8
// (datasets/vocab.h utf8_decode), or normalisation.
#pragma once

#include <string>

namespace ks {

// cp's UTF-8 bytes (one to four) appended to out; cp must be at most 0x10FFFF.
inline void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xC0 | (cp >> 6));
    out += char(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += char(0xE0 | (cp >> 12));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  } else {
    out += char(0xF0 | (cp >> 18));
    out += char(0x80 | ((cp >> 12) & 0x3F));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  }
}

}  // namespace ks
