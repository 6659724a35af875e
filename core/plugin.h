// core/plugin.h — what a Keystone plugin declares about itself. A plugin is a
// shared library (CMake: add_library(mine MODULE ...) linking Keystone::keystone)
// whose registrations — KS_REGISTER_ATTENTION (nn/attention/attention.h),
// KS_REGISTER_MODEL (models/kind.h), KS_REGISTER_KERNEL (core/dispatch.h) —
// run when it is loaded (`keystone train --plugin libmine.so`, or a config's
// "plugins" list), so the names it registers become valid in JSON configs. One
// source file of the plugin says, once:
//
//   #include "models/plugin.h"
//   KS_PLUGIN("mine");
//
// which puts a declaration into the library: its name, the Keystone version,
// the ABI tag its compiler saw (below), and the plugin ABI of the headers it
// was built against (models/plugin.h: a revision number and a hash of the
// public types' layouts). The loader (core/plugin_loader.h) reads it from the
// file before running any of the plugin's code and refuses a library without
// one, or one built for another Keystone version, ABI tag, revision or layout.
//
// The ABI tag names what changes the layout of the types a plugin shares with
// Keystone (std::string, std::vector, std::shared_ptr inside every header):
// the C++ ABI, the standard library and its string ABI, and libstdc++'s debug
// containers. No Keystone header's layout depends on how Keystone was built
// (CUDA, MPI, sanitizers, NDEBUG: no installed header tests those macros,
// tests/tools/test_plugins.sh checks it), so the tag does not name them.
// Here: the declaration's format, which the loader reads. Not here: KS_PLUGIN
// and what the layout hash covers (models/plugin.h), loading (core/plugin_loader.h).
#pragma once

#include <array>
#include <cstddef>  // defines the standard library's own macros (__GLIBCXX__, _LIBCPP_ABI_VERSION)
#include <cstdint>

#include "core/version.h"

#define KS_PLUGIN_STR_INNER(x) #x
#define KS_PLUGIN_STR(x) KS_PLUGIN_STR_INNER(x)

#if defined(__GXX_ABI_VERSION)
#define KS_PLUGIN_CXX_ABI "itanium"
#else
#define KS_PLUGIN_CXX_ABI "unknown-c++-abi"
#endif
#if defined(_LIBCPP_ABI_VERSION)
#define KS_PLUGIN_STDLIB_ABI " libc++" KS_PLUGIN_STR(_LIBCPP_ABI_VERSION)
#elif defined(__GLIBCXX__)
#define KS_PLUGIN_STDLIB_ABI " libstdc++ cxx11-abi=" KS_PLUGIN_STR(_GLIBCXX_USE_CXX11_ABI)
#else
#define KS_PLUGIN_STDLIB_ABI " unknown-stdlib"
#endif
#if defined(_GLIBCXX_DEBUG)
#define KS_PLUGIN_DEBUG_CONTAINERS " debug-containers"
#else
#define KS_PLUGIN_DEBUG_CONTAINERS ""
#endif
// e.g. "itanium libstdc++ cxx11-abi=1": the same string in Keystone and in every plugin it loads.
#define KS_PLUGIN_ABI KS_PLUGIN_CXX_ABI KS_PLUGIN_STDLIB_ABI KS_PLUGIN_DEBUG_CONTAINERS

// The section and the exported C symbol that hold the declaration, and the
// first field of it (the declaration's own format: 2 since the ABI revision
// and the layout hash; format 1, of plugins built before, had neither).
#define KS_PLUGIN_SECTION ".ks_plugin"
#define KS_PLUGIN_SYMBOL "ks_plugin_declaration"
#define KS_PLUGIN_MAGIC "keystone-plugin 2"
#define KS_PLUGIN_MAGIC_V1 "keystone-plugin 1"

namespace ks {

// A plugin ABI: the revision and the layout hash of the headers a plugin (or
// this library) was built from (models/plugin.h says what they cover).
struct PluginAbi {
  uint64_t revision = 0;
  uint64_t layout_hash = 0;
};

// This library's, from its own headers: defined in models/plugin.cpp, where
// every public type is seen (the loader, here in core/, compares with it).
PluginAbi library_plugin_abi();

// The declaration's bytes, NUL-separated fields the loader reads from the
// file without relocating it: the magic, name, version, ABI tag, the
// revision in decimal and the layout hash in 16 hex digits; then NULs.
template <size_t A, size_t B, size_t C, size_t D>
consteval std::array<char, A + B + C + D + 40> plugin_declaration(const char (&magic)[A], const char (&name)[B],
                                                                  const char (&version)[C], const char (&abi)[D],
                                                                  uint64_t revision, uint64_t layout_hash) {
  std::array<char, A + B + C + D + 40> out{};
  size_t at = 0;
  auto put = [&](const char* s, size_t n) {  // n counts the literal's NUL
    for (size_t i = 0; i < n; ++i) out[at++] = s[i];
  };
  put(magic, A);
  put(name, B);
  put(version, C);
  put(abi, D);
  char digits[20] = {};  // at most 20 decimal digits
  size_t n = 0;
  do digits[n++] = char('0' + revision % 10);
  while ((revision /= 10) != 0);
  while (n > 0) out[at++] = digits[--n];
  out[at++] = '\0';
  for (int shift = 60; shift >= 0; shift -= 4) out[at++] = "0123456789abcdef"[(layout_hash >> shift) & 15];
  return out;  // the hash's NUL and the rest are the zeros out started with
}

}  // namespace ks

// The declaration with every field given: KS_PLUGIN's (models/plugin.h), and
// in tests a plugin that claims another version, ABI, revision or layout.
#define KS_PLUGIN_DECLARE(name, version, abi, revision, layout_hash)                                                  \
  extern "C"                                                                                                          \
      __attribute__((visibility("default"), used, section(KS_PLUGIN_SECTION))) constexpr auto ks_plugin_declaration = \
          ::ks::plugin_declaration(KS_PLUGIN_MAGIC, name, version, abi, revision, layout_hash);                       \
  static_assert(sizeof(name) > 1, "KS_PLUGIN: the plugin's name is a non-empty string literal")

// KS_PLUGIN itself is models/plugin.h's: the layout hash it records covers
// types of every layer, which a header in core/ cannot include. A plugin that
// includes only this header is told where it went.
#ifndef KS_PLUGIN
#define KS_PLUGIN(name) \
  static_assert(false, "KS_PLUGIN: #include \"models/plugin.h\" (it records the plugin ABI, core/plugin.h cannot)")
#endif
