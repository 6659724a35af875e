// tools/cli/commands.h — the subcommands of the `keystone` binary. Each takes the
// arguments after its name, prints its own --help, returns the exit code, and
// throws cli::UsageError (exit 2) or ks::Error (exit 1) on bad input.
#pragma once

#include <string>
#include <vector>

namespace ks::tools {

int bench(const std::vector<std::string>& args);  // time training steps of the reference decoder LM
int info(const std::vector<std::string>& args);   // parameters, FLOPs and memory of a config
int config(
    const std::vector<std::string>& args);  // a training config with every key explicit (tools/cli/config_cmd.cpp)
int train(const std::vector<std::string>& args);      // train from a config into a run folder (tools/train/train.cpp)
int evaluate(const std::vector<std::string>& args);   // metrics of a run's checkpoint on a split
int generate(const std::vector<std::string>& args);   // sample text from a language-model run
int translate(const std::vector<std::string>& args);  // greedy or beam decoding with a seq2seq run
int average(const std::vector<std::string>& args);    // average the weights of runs of one architecture
int plot(const std::vector<std::string>& args);       // SVG curves of runs (tools/figures/plot.h)
int import_model(const std::vector<std::string>& args);  // a Hugging Face folder as a run (tools/interop/)
int export_model(const std::vector<std::string>& args);  // a run as a Hugging Face folder (tools/interop/)
int analyze(const std::vector<std::string>&
                args);  // attention maps, head redundancy, importance, rank (tools/analyze/analyze.h)

}  // namespace ks::tools
