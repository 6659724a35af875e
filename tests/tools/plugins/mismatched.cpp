// tests/tools/plugins/mismatched.cpp — a plugin whose declaration says it was
// built against other Keystone headers, as one built against another Keystone
// would be: another version (KS_TEST_VERSION), ABI tag (KS_TEST_ABI), plugin
// ABI revision (KS_TEST_REVISION) or layout hash (KS_TEST_LAYOUT), or, with
// KS_TEST_FORMAT1, the declaration of a plugin built before the plugin ABI was
// recorded (version and ABI tag alike, no revision, no layout hash: such a
// plugin, built against headers whose AttentionConfig had another layout,
// loaded and crashed in training). The loader must refuse it, naming the
// plugin's and the library's, before its initialiser runs
// (tests/tools/test_plugins.sh).
#include <cstdio>

#include "models/plugin.h"

#ifdef KS_TEST_FORMAT1
// KS_PLUGIN's declaration as it was written before revision 1 (format 1).
extern "C" __attribute__((visibility("default"), used, section(KS_PLUGIN_SECTION))) const char ks_plugin_declaration[] =
    KS_PLUGIN_MAGIC_V1
    "\0"
    "mismatched\0" KS_VERSION_STRING "\0" KS_PLUGIN_ABI "\0";
#else
KS_PLUGIN_DECLARE("mismatched", KS_TEST_VERSION, KS_TEST_ABI, KS_TEST_REVISION, KS_TEST_LAYOUT);
#endif

namespace {
const bool kRan = (std::puts("mismatched: my initialiser ran"), true);
}
