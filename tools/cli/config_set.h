// tools/cli/config_set.h — `--set key=value`, the flag with which `train`,
// `config` and `info` override one key of a config by its dotted path
// (run_config.h's apply_override) before anything reads it. A malformed
// assignment, or a key or value that is not UTF-8 (a config is JSON, which
// holds only UTF-8), is a usage error (exit 2) naming it. Not here: whether
// the key exists or its value is valid, which the config's own parse decides.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace ks::tools {

void apply_set(nlohmann::json& config, const std::string& assignment);

}  // namespace ks::tools
