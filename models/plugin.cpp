// models/plugin.cpp — the library's own plugin ABI (core/plugin.h
// library_plugin_abi): the revision and layout hash of the headers it was
// built from, which the loader compares with each plugin's (models/plugin.h).
#include "models/plugin.h"

namespace ks {

PluginAbi library_plugin_abi() { return {KS_PLUGIN_ABI_REVISION, plugin_abi::kLayoutHash}; }

}  // namespace ks
