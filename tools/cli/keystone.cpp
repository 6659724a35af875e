// tools/cli/keystone.cpp — the `keystone` binary: dispatches to a subcommand.
// Exit codes: 0 success, 2 usage error, 1 runtime error; messages on stderr.
#include <cstdio>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "core/cpu_features.h"
#include "core/distributed.h"
#include "core/error.h"
#include "tools/cli/cli.h"
#include "tools/cli/commands.h"

namespace {

void usage(FILE* out) {
  std::fprintf(out,
               "usage: keystone <command> [flags]\n"
               "commands:\n"
               "  train      train a model from a JSON config into a run folder\n"
               "  eval       loss, perplexity and accuracy of a run's checkpoint on a split\n"
               "  generate   sample text from a language-model run\n"
               "  translate  greedy or beam-search decoding with a seq2seq run\n"
               "  average    average the weights of runs of one architecture into a new run\n"
               "  plot       loss and accuracy curves of runs, in one SVG\n"
               "  analyze    attention maps, head redundancy, importance, pruning and rank of a run\n"
               "  bench      time training steps of the reference decoder LM (one JSON line)\n"
               "  info       parameters, FLOPs per token and training memory of a model config\n"
               "  config     a training config with every key and default explicit\n"
               "  import     a Hugging Face model folder (GPT-2 or Llama: GPT2LMHeadModel, LlamaForCausalLM)\n"
               "             as a run folder\n"
               "  export     a run as a Hugging Face model folder (GPT-2 or Llama)\n"
               "  tokenize   text files, folders and globs (plain, gzip, xz, zstd) to llm.c .bin token shards\n"
               "Run `keystone <command> --help` for its flags.\n"
               "Plugins (shared libraries that declare KS_PLUGIN, core/plugin.h) add attention families and\n"
               "model kinds: train, config, info and bench take --plugin FILE; a run folder's config.json\n"
               "lists the plugins it was trained with, and every command that reads it loads them.\n");
}

// Prints a failure and returns its exit code; in a data-parallel job it ends
// every rank instead (the others would wait for this one in their next
// collective), naming this rank.
int fail(const std::string& cmd, const std::string& message, int code) {
  if (ks::dist::world_is_distributed()) {
    ks::dist::ProcessGroup* g = ks::dist::existing_world();
    std::fprintf(stderr, "keystone %s: rank %d of %d: %s\n", cmd.c_str(), g->rank(), g->size(), message.c_str());
    g->abort(code);
  }
  std::fprintf(stderr, "keystone %s: %s\n", cmd.c_str(), message.c_str());
  return code;
}

int run(const std::string& cmd, const std::vector<std::string>& args) {
  if (cmd == "train") return ks::tools::train(args);
  if (cmd == "eval") return ks::tools::evaluate(args);
  if (cmd == "generate") return ks::tools::generate(args);
  if (cmd == "translate") return ks::tools::translate(args);
  if (cmd == "average") return ks::tools::average(args);
  if (cmd == "plot") return ks::tools::plot(args);
  if (cmd == "analyze") return ks::tools::analyze(args);
  if (cmd == "bench") return ks::tools::bench(args);
  if (cmd == "info") return ks::tools::info(args);
  if (cmd == "config") return ks::tools::config(args);
  if (cmd == "import") return ks::tools::import_model(args);
  if (cmd == "export") return ks::tools::export_model(args);
  if (cmd == "tokenize") return ks::tools::tokenize(args);
  std::fprintf(stderr, "keystone: unknown command '%s'\n", cmd.c_str());
  usage(stderr);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  const std::string cmd = argv[1];
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    usage(stdout);
    return 0;
  }
  std::vector<std::string> args(argv + 2, argv + argc);
  try {
    ks::cpu_features();  // a bad KS_CPU_ISA stops here, before any work, not in the first kernel that asks
    const int code = run(cmd, args);
    ks::dist::shutdown();  // MPI_Finalize after a data-parallel run; nothing otherwise
    return code;
  } catch (const ks::cli::UsageError& e) {
    return fail(cmd, ks::str(e.what(), " (see keystone ", cmd, " --help)"), 2);
  } catch (const ks::Error& e) {
    return fail(cmd, e.what(), 1);
  } catch (const std::bad_alloc&) {
    // An allocation no reader caught (a model or data set too large for the
    // machine): say so plainly rather than "std::bad_alloc".
    return fail(cmd, "out of memory (the model, data or batch is too large for this machine)", 1);
  } catch (const std::exception& e) {
    return fail(cmd, e.what(), 1);
  }
}
