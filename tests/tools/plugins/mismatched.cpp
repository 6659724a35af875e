// tests/tools/plugins/mismatched.cpp — a plugin that declares another Keystone
// version (KS_TEST_VERSION) or ABI tag (KS_TEST_ABI), as one built against
// another Keystone would: the loader must refuse it, naming both versions and
// ABIs, before its initialiser runs (tests/tools/test_plugins.sh).
#include <cstdio>

#include "core/plugin.h"

KS_PLUGIN_DECLARE("mismatched", KS_TEST_VERSION, KS_TEST_ABI);

namespace {
const bool kRan = (std::puts("mismatched: my initialiser ran"), true);
}
