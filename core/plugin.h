// core/plugin.h — what a Keystone plugin declares about itself. A plugin is a
// shared library (CMake: add_library(mine MODULE ...) linking Keystone::keystone)
// whose registrations — KS_REGISTER_ATTENTION (nn/attention/attention.h),
// KS_REGISTER_MODEL (models/kind.h), KS_REGISTER_KERNEL (core/dispatch.h) —
// run when it is loaded (`keystone train --plugin libmine.so`, or a config's
// "plugins" list), so the names it registers become valid in JSON configs. One
// source file of the plugin says, once:
//
//   KS_PLUGIN("mine");
//
// which puts a declaration into the library: its name, the Keystone version
// and the ABI tag its compiler saw (below). The loader (core/plugin_loader.h)
// reads it from the file before running any of the plugin's code and refuses
// a library without one, or one built for another Keystone version or ABI.
//
// The ABI tag names what changes the layout of the types a plugin shares with
// Keystone (std::string, std::vector, std::shared_ptr inside every header):
// the C++ ABI, the standard library and its string ABI, and libstdc++'s debug
// containers. No Keystone header's layout depends on how Keystone was built
// (CUDA, MPI, sanitizers, NDEBUG: no installed header tests those macros,
// tests/tools/test_plugins.sh checks it), so the tag does not name them.
// Not here: loading (core/plugin_loader.h).
#pragma once

#include <cstddef>  // defines the standard library's own macros (__GLIBCXX__, _LIBCPP_ABI_VERSION)

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
// first field of it (the declaration's own format, 1).
#define KS_PLUGIN_SECTION ".ks_plugin"
#define KS_PLUGIN_SYMBOL "ks_plugin_declaration"
#define KS_PLUGIN_MAGIC "keystone-plugin 1"

// The declaration with its version and ABI given: KS_PLUGIN's, and in tests a
// plugin that claims another version. Fields are NUL-separated string
// literals, so the loader reads them from the file without relocating it.
#define KS_PLUGIN_DECLARE(name, version, abi)                                                                      \
  extern "C" __attribute__((visibility("default"), used, section(KS_PLUGIN_SECTION)))                              \
  const char ks_plugin_declaration[] = KS_PLUGIN_MAGIC "\0" name "\0" version "\0" abi "\0"; /* one per library */ \
  static_assert(sizeof(name) > 1, "KS_PLUGIN: the plugin's name is a non-empty string literal")

// Declares this shared library a Keystone plugin named `name` (a string literal).
#define KS_PLUGIN(name) KS_PLUGIN_DECLARE(name, KS_VERSION_STRING, KS_PLUGIN_ABI)
