// tools/cli/train.cpp — `keystone train`: flags to a config, then the Trainer.
// Exit codes: 0 finished, 130 stopped by Ctrl-C/SIGTERM after saving
// (as shells report a SIGINT), 2 usage error, 1 runtime error. --resume of a
// folder holding weights alone (keystone import's) points at --init-from.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>

#include "core/cpu_features.h"
#include "core/distributed.h"
#include "core/matmul_precision.h"
#include "nn/checkpoint.h"
#include "nn/safetensors.h"
#include "nn/user_input.h"
#include "tools/cli/cli.h"
#include "tools/cli/commands.h"
#include "tools/cli/config_set.h"
#include "tools/figures/plot.h"
#include "tools/train/distributed_run.h"
#include "tools/train/progress.h"
#include "tools/train/trainer.h"

namespace ks::tools {

namespace {

const char* kUsage =
    "usage: keystone train --config FILE [--set key=value ...] [--plugin FILE ...] [--out DIR] [--device cpu|cuda]\n"
    "                      [--quiet]\n"
    "       keystone train --out DIR --resume [--set train.key=value ...]\n"
    "       keystone train --init-from RUN --out DIR [--config FILE] [--set key=value ...]\n"
    "\n"
    "Trains the model a JSON config describes (see tools/configs/ and tools/train/run_config.h) and\n"
    "writes a run folder (default runs/<name>): config.json, metrics.jsonl, latest.safetensors,\n"
    "best.safetensors (lowest validation loss), tokenizer.json, plot.svg and provenance.jsonl\n"
    "(the binary's commit and the machine of each training session).\n"
    "\n"
    "  --config FILE      the training config\n"
    "  --set key=value    override one config key by its dotted path, e.g. --set train.steps=500\n"
    "                     --set model.attention.type=mgk (repeatable; the value is JSON or a string)\n"
    "  --plugin FILE      load a plugin (a shared library that declares KS_PLUGIN, core/plugin.h) before\n"
    "                     the config is read, so the attention families and model kinds it registers\n"
    "                     may be named (repeatable; added to the config's \"plugins\" list, which the\n"
    "                     run folder keeps, so eval, generate, analyze and --resume load it too)\n"
    "  --out DIR          the run folder\n"
    "  --resume           continue the run in --out DIR from its latest checkpoint, exactly as if\n"
    "                     it had not stopped; only train.* keys may be overridden, and data.train,\n"
    "                     data.valid, data.test given the new path of a moved file (same content)\n"
    "  --init-from RUN    fine-tune: start from RUN's weights (best, else latest) with a fresh optimizer,\n"
    "                     reading the data with RUN's tokenizer; the config is RUN's config.json unless\n"
    "                     --config is given (its model must have the same tensors)\n"
    "  --device cpu|cuda  where to train (cuda needs a CUDA build and a GPU)\n"
    "  --quiet            no progress line\n"
    "\n"
    "Ctrl-C (or SIGTERM) saves a checkpoint after the current step and exits with status 130.\n"
    "\n"
    "Data parallel: mpirun -np N keystone train ... runs N ranks, each on train.batch_size\n"
    "examples of every global batch of N x train.batch_size (docs/distributed.md).\n";

// A checkpoint `keystone import` (or any writer of weights alone) made: its
// header's metadata when it holds no optimizer state, read without its
// tensors' bytes; nullopt for a training checkpoint, or a file that is not
// one (the resume's own load says what is wrong with it).
std::optional<std::map<std::string, std::string>> weights_only_metadata(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  unsigned char len[8];
  if (!in.read(reinterpret_cast<char*>(len), 8)) return std::nullopt;
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= uint64_t(len[i]) << (8 * i);
  if (n > nn::kMaxSafetensorsHeaderBytes) return std::nullopt;
  std::string header(size_t(n), '\0');
  if (!in.read(header.data(), std::streamsize(n))) return std::nullopt;
  const nlohmann::json j = nn::try_parse_json(header, file.string());
  if (!j.is_object()) return std::nullopt;
  std::map<std::string, std::string> metadata;
  for (const auto& [name, entry] : j.items()) {
    if (name.rfind(nn::kOptimizerPrefix, 0) == 0) return std::nullopt;
    if (name == "__metadata__" && entry.is_object())
      for (const auto& [k, v] : entry.items())
        if (v.is_string()) metadata[k] = v.get<std::string>();
  }
  return metadata;
}

// --resume of a run folder whose latest checkpoint holds weights alone (an
// imported Hugging Face model): there is no training to continue, so say
// what starts one from those weights instead of "no optimizer state".
void check_resumable(const RunPaths& paths) {
  if (!std::filesystem::exists(paths.latest())) return;
  const auto metadata = weights_only_metadata(paths.latest());
  if (!metadata) return;
  const auto from = metadata->find("keystone.imported_from");
  const std::string dir = paths.dir.string();
  throw Error(str("cannot resume: ", paths.latest().string(), " holds weights only, no optimizer or training state (",
                  from != metadata->end() ? "keystone import wrote it from " + from->second
                                          : std::string("not a training checkpoint"),
                  "); fine-tune from it as a new run: keystone train --init-from ", dir, " --out NEW_DIR"));
}

}  // namespace

int train(const std::vector<std::string>& args) {
  if (cli::help_requested(args, kUsage)) return 0;
  cli::Flags f(args, {"config", "set", "plugin", "out", "device", "init-from"}, {"resume", "quiet"}, {"set", "plugin"});
  const bool resume = f.has("resume");
  if (resume && f.has("init-from")) throw cli::UsageError("--init-from starts a new run; it does not go with --resume");
  nlohmann::json raw;
  std::string out = f.get("out", "");
  if (resume) {
    if (out.empty()) throw cli::UsageError("--resume needs --out DIR (the run folder to continue)");
    if (f.has("config")) throw cli::UsageError("--resume takes the run's own config.json; drop --config");
    if (f.has("plugin")) throw cli::UsageError("--resume loads the plugins the run's config.json lists; drop --plugin");
    RunPaths paths{out};
    // In a data-parallel run only rank 0 reads the folder; the others get its text.
    dist::ProcessGroup& ranks = dist::world();
    if (ranks.rank() == 0) check_resumable(paths);
    if (ranks.size() == 1) {
      raw = read_json_file(paths.config().string());
    } else {
      const std::optional<std::string> text = file_from_rank0(ranks, paths.config(), kMaxConfigBytes);
      KS_CHECK(text.has_value(), "cannot resume: rank 0 finds no ", paths.config().string());
      raw = nn::parse_json(*text, paths.config().string());
    }
    upgrade_stored_config(raw);
    for (const std::string& s : f.get_all("set")) {
      if (s.rfind("data.", 0) == 0) {  // a data file that moved, with the content the run recorded
        KS_CHECK(raw.is_object() && raw.contains("data"), "cannot resume: ", paths.config().string(),
                 " has no data section");
        const std::string note = relocate_data_file(raw["data"], s);
        if (dist::world().rank() == 0) std::printf("note: %s\n", note.c_str());
        continue;
      }
      if (s.rfind("train.", 0) != 0)
        throw cli::UsageError("--set " + s +
                              ": a resumed run may only change train.* keys (and the path of a "
                              "data file that moved: data.train, data.valid, data.test)");
      apply_set(raw, s);
    }
  } else {
    const std::string init_from = f.get("init-from", "");
    if (!f.has("config") && init_from.empty())
      throw cli::UsageError("--config FILE is required (or --out DIR --resume)");
    if (f.has("config")) {
      raw = read_json_file(f.get("config", ""));
    } else {
      raw = read_json_file(RunPaths{init_from}.config().string());
      upgrade_stored_config(raw);
      if (raw.contains("data")) raw["data"].erase("fingerprints");  // the new run records its own
    }
    // A new run records its own plugins' fingerprints (a config.json passed
    // as --config, or --init-from's, holds those of the run it came from).
    if (raw.is_object()) raw.erase("plugin_fingerprints");
    for (const std::string& s : f.get_all("set")) apply_set(raw, s);
    add_plugins(raw, f.get_all("plugin"));
  }
  if (f.has("device")) apply_set(raw, "train.device=" + f.get("device", ""));
  TrainConfig config = parse_train_config(raw);
  if (out.empty()) out = "runs/" + config.name;
  // Where bf16 GEMMs run is said once: a CPU without a bf16 unit runs them in float32.
  const TrainOptions& t = config.train;
  if (!f.has("quiet") && dist::world().rank() == 0) {
    const bool cpu_bf16 = t.device == "cpu" && parse_matmul_precision(t.precision, "train.precision") ==
                                                   MatmulPrecision::BFloat16;  // bf16 or auto
    const std::string line = format_gemm_path(t.precision, t.device, cpu_bf16 ? cpu_gemm_path() : CpuGemmPath::Float32,
                                              cpu_gemm_path_forced(), float32_path_reason(cpu_features()));
    if (!line.empty()) std::fprintf(stderr, "%s\n", line.c_str());
  }

  train::TrainerOptions options{.run_dir = out,
                                .resume = resume,
                                .init_from = f.get("init-from", ""),
                                .progress = !f.has("quiet"),
                                .write_plot = [](const std::filesystem::path& dir, const std::filesystem::path& svg) {
                                  write_plot_svg({dir}, svg);
                                }};
  train::Trainer trainer(config, options);
  train::StopSignalScope signals;
  return trainer.run() == train::TrainOutcome::Finished ? 0 : 130;
}

}  // namespace ks::tools
