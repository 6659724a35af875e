// core/plugin_loader.h — loading Keystone plugins (shared libraries that say
// KS_PLUGIN, core/plugin.h) into the process, and the list of those loaded.
//
// load_plugin copies the file into an anonymous in-memory file first (memfd)
// and hashes the copy (its fingerprint, core/fingerprint.h); everything after
// reads the copy, and dlopen maps the copy, so a file copied over the plugin
// while it is in use changes nothing in this process (the original mapped,
// such a copy crashed a training run). It reads the library's declaration
// (its ELF section KS_PLUGIN_SECTION), so a file that is no plugin, or a
// plugin built for another Keystone version, ABI tag, plugin ABI revision or
// layout hash (models/plugin.h), is refused before any of its code runs.
// The caller's own check (a run's recorded fingerprint) runs then too.
// Then dlopen runs its static initialisers, which register attention
// families, model kinds and kernels. The registries ask plugin_may_register
// before they add a name (kernel tables through kernel_may_register,
// core/dispatch.h, a kernel named by its table and device: "CPU kernel 'x'"): a name a plugin registers that already
// exists (built in, or from another plugin) is refused and reported by load_plugin, naming both. Every failure is a
// ks::Error that names the file.
//
// Plugins are loaded from one thread, before anything is built from a config
// (tools/train/run_config.h loads a config's "plugins"); they are never
// unloaded (registries hold pointers into them). Loading needs /proc (dlopen
// opens the copy as /proc/self/fd/N), and $ORIGIN in a plugin's RUNPATH names
// /proc/self/fd: a plugin's own dependencies are found by an absolute
// RUNPATH, LD_LIBRARY_PATH, or because they are loaded already (libkeystone). Not here: what a plugin
// declares (core/plugin.h), the config key and the CLI flag (tools/).
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace ks {

struct LoadedPlugin {
  std::string name;                     // as its KS_PLUGIN says
  std::string path;                     // absolute, as given (not resolving symbolic links)
  std::string version;                  // the Keystone version it was built for
  std::string fingerprint;              // the content hash of the file loaded, "fnv1a64:<16 hex digits>"
  std::vector<std::string> registered;  // what its loading registered: "attention family 'tempered'",
                                        // "model kind 'x'", "CPU kernel 'table'"
};

// A caller's condition on a plugin, run after its declaration is read and
// checked and its fingerprint taken, before any of its code runs (and on a
// plugin loaded already): it throws ks::Error to refuse the plugin.
using PluginCheck = std::function<void(const LoadedPlugin&)>;

// Loads the plugin at `path` (relative: to the working directory) and returns
// it; a file loaded already (the same file by any path) is not loaded again.
// Errors: no such file; not a 64-bit ELF shared library; no KS_PLUGIN
// declaration ("not a Keystone plugin"); a declaration from before the plugin
// ABI was recorded, another Keystone version or ABI tag, another plugin ABI
// revision or layout hash (the plugin's and the library's named, "rebuild the
// plugin against these headers"); `check`'s; dlopen's own error (an undefined
// symbol, a missing dependency); another plugin of the same name; a name
// registered already.
const LoadedPlugin& load_plugin(const std::string& path, const PluginCheck& check = {});

// Every plugin loaded, in load order.
std::vector<LoadedPlugin> loaded_plugins();

// For the registries (core/registry.h's Registry, core/dispatch.h's kernel tables), before
// they add `name`, a `what` such as "attention family" or "model kind";
// `exists`: the registry has the name already. Outside a plugin's loading it
// returns true (Keystone's own rule: a later registration replaces). While a
// plugin loads, it records the name as the plugin's and returns true, or, when
// the name exists, records the clash for load_plugin to report and returns
// false: the registry keeps its entry.
bool plugin_may_register(const char* what, const std::string& name, bool exists);

}  // namespace ks
