// tools/train/config_utf8.cpp — UTF-8 checks of config text.
#include "tools/train/config_utf8.h"

#include <cstdio>

#include "core/error.h"

namespace ks::tools {

using json = nlohmann::json;

size_t invalid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    // The sequence's length, and the range of its second byte (narrower after
    // E0, ED, F0 and F4: no overlong forms, surrogates or code points past U+10FFFF).
    size_t n = 0;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c < 0x80) {
      n = 1;
    } else if (c >= 0xC2 && c <= 0xDF) {
      n = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      n = 3;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      n = 4;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    } else {
      return i;
    }
    if (i + n > s.size()) return i;
    for (size_t k = 1; k < n; ++k) {
      const unsigned char b = static_cast<unsigned char>(s[i + k]);
      if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xBF)) return i;
    }
    i += n;
  }
  return std::string::npos;
}

namespace {

// The dotted key of the first string (or object key) in `j` that is not
// UTF-8, and the offset of its first bad byte; "" when there is none.
std::string key_not_utf8(const json& j, const std::string& prefix, size_t& offset, char& byte) {
  auto check = [&](const std::string& s) {
    offset = invalid_utf8(s);
    if (offset != std::string::npos) byte = s[offset];
    return offset != std::string::npos;
  };
  if (j.is_string() && check(j.get_ref<const std::string&>())) return prefix.empty() ? "(the config)" : prefix;
  if (j.is_object())
    for (auto& [k, v] : j.items()) {
      const std::string key = prefix.empty() ? k : prefix + "." + k;
      if (check(k)) return prefix.empty() ? "(a key)" : prefix + " (a key)";
      if (std::string bad = key_not_utf8(v, key, offset, byte); !bad.empty()) return bad;
    }
  if (j.is_array())
    for (size_t i = 0; i < j.size(); ++i)
      if (std::string bad = key_not_utf8(j[i], str(prefix, "[", i, "]"), offset, byte); !bad.empty()) return bad;
  return "";
}

}  // namespace

void check_config_utf8(const json& config) {
  size_t offset = 0;
  char byte = 0;
  const std::string key = key_not_utf8(config, "", offset, byte);
  if (key.empty()) return;
  char hex[8];
  std::snprintf(hex, sizeof hex, "0x%02x", unsigned(static_cast<unsigned char>(byte)));
  throw Error(str("config: ", key, ": not valid UTF-8 (byte ", hex, " at offset ", offset,
                  "); a config is JSON, which holds only UTF-8 text"));
}

}  // namespace ks::tools
