// tools/commands.h — the subcommands of the `keystone` binary. Each takes the
// arguments after its name, prints its own --help, returns the exit code, and
// throws cli::UsageError (exit 2) or ks::Error (exit 1) on bad input.
#pragma once

#include <string>
#include <vector>

namespace ks::tools {

int bench(const std::vector<std::string>& args);  // time training steps of the reference decoder LM
int info(const std::vector<std::string>& args);   // parameters, FLOPs and memory of a config

}  // namespace ks::tools
