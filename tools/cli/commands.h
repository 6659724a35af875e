// tools/cli/commands.h — the subcommands of the `keystone` binary. Each takes the
// arguments after its name, prints its own --help, returns the exit code, and
// throws cli::UsageError (exit 2) or ks::Error (exit 1) on bad input.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ks::tools {

// The widest --beam generate and translate take, checked before anything is
// allocated: each beam is a row of caches and logits for every source, and
// beams far past ten stop helping (a wider one was a typo: --beam 1e8 asked
// for gigabytes before the check existed).
inline constexpr int64_t kMaxBeam = 256;

int bench(const std::vector<std::string>& args);  // time training steps of the reference decoder LM
int info(const std::vector<std::string>& args);   // parameters, FLOPs and memory of a config
int config(
    const std::vector<std::string>& args);  // a training config with every key explicit (tools/cli/config_cmd.cpp)
int train(const std::vector<std::string>& args);         // train from a config into a run folder (tools/cli/train.cpp)
int evaluate(const std::vector<std::string>& args);      // metrics of a run's checkpoint on a split
int generate(const std::vector<std::string>& args);      // sample text from a language-model run
int translate(const std::vector<std::string>& args);     // greedy or beam decoding with a seq2seq run
int average(const std::vector<std::string>& args);       // average the weights of runs of one architecture
int plot(const std::vector<std::string>& args);          // SVG curves of runs (tools/figures/plot.h)
int import_model(const std::vector<std::string>& args);  // a Hugging Face folder as a run (tools/interop/)
int export_model(const std::vector<std::string>& args);  // a run as a Hugging Face folder (tools/interop/)
int analyze(const std::vector<std::string>&
                args);  // attention maps, head redundancy, importance, rank (tools/analyze/analyze.h)
int tokenize(const std::vector<std::string>& args);  // text files to llm.c token shards (tools/tokenize/)

}  // namespace ks::tools
