// tools/cli/config_set.h — `--set key=value`, the flag with which `train`,
// `config` and `info` override one key of a config by its dotted path
// (run_config.h's apply_override) before anything reads it. A malformed
// assignment, or a key or value that is not UTF-8 (a config is JSON, which
// holds only UTF-8), is a usage error (exit 2) naming it. Not here: whether
// the key exists or its value is valid, which the config's own parse decides.
// And the other use of the flag, for a trained run: the new path of a data
// file that moved.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace ks::tools {

void apply_set(nlohmann::json& config, const std::string& assignment);

// `--set data.train=PATH` (or valid, test) for a trained run (eval, train
// --resume): its data file moved, and PATH, which must hold the content the
// run recorded, replaces the old path in `section` (the run's data section).
// Returns the line to print; another key is a cli::UsageError, another
// content an error naming both hashes.
std::string relocate_data_file(nlohmann::json& section, const std::string& assignment);

}  // namespace ks::tools
