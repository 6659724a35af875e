// tools/train/build_info.h — which code this binary was built from: the git commit
// and whether tracked files had uncommitted changes at build time. The
// definitions are generated at every build (cmake/build_info.cmake), so a
// rebuild after a commit reports the new one. "unknown" outside a git checkout.
// Not here: the machine a run trained on (core/cpu_features.h), or the
// per-run record that uses both (tools/train/provenance.h).
#pragma once

namespace ks::tools {

const char* build_commit();  // 40 hex digits, or "unknown"
bool build_dirty();          // tracked files differed from build_commit()

}  // namespace ks::tools
