// core/version.h — Keystone's version, the one the root CMakeLists.txt declares
// (project(Keystone VERSION ...); tests/tools/test_plugins.sh checks that the
// two agree). A plugin records it when built (core/plugin.h) and the loader refuses
// a plugin built for another version. Not here: the commit a binary was built
// from (tools/train/build_info.h).
#pragma once

#define KS_VERSION_MAJOR 0
#define KS_VERSION_MINOR 1
#define KS_VERSION_PATCH 0
#define KS_VERSION_STRING "0.1.0"
