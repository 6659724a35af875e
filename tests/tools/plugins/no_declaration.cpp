// tests/tools/plugins/no_declaration.cpp — a shared library without KS_PLUGIN:
// loading it as a plugin must fail with "not a Keystone plugin" before any of
// its code runs (its initialiser would print a line; tests/tools/test_plugins.sh
// checks that none appears).
#include <cstdio>

namespace {
const bool kRan = (std::puts("no_declaration: my initialiser ran"), true);
}
