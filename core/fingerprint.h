// core/fingerprint.h — FNV-1a (64 bits), the content hash Keystone records of
// the files a run depends on, written "fnv1a64:<16 hex digits>": a run
// folder's data files and tokenizers (tools/train/data_setup.h) and its
// plugins (core/plugin_loader.h). Fast, and enough to notice an edited or
// replaced file; no defence against a forged one. Also usable at compile
// time (constexpr): the plugin ABI's layout hash (models/plugin.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace ks {

struct Fnv1a {
  uint64_t h = 14695981039346656037ull;

  constexpr void add(const char* bytes, size_t n) {
    for (size_t i = 0; i < n; ++i) h = (h ^ uint8_t(bytes[i])) * 1099511628211ull;
  }
  constexpr void add(std::string_view s) { add(s.data(), s.size()); }
  // The eight bytes of v, least significant first (the same on every machine).
  constexpr void add_u64(uint64_t v) {
    for (int i = 0; i < 8; ++i) h = (h ^ uint8_t(v >> (8 * i))) * 1099511628211ull;
  }
  // "fnv1a64:<16 hex digits>"
  std::string text() const {
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", (unsigned long long)h);
    return std::string("fnv1a64:") + hex;
  }
};

// The fingerprint of `bytes`, as Fnv1a::text writes it.
inline std::string fingerprint_of(std::string_view bytes) {
  Fnv1a f;
  f.add(bytes);
  return f.text();
}

}  // namespace ks
