// tools/cli/average.cpp — `keystone average RUN... --out DIR`: the uniform
// average of the weights of several runs of one architecture (checkpoint
// averaging, as in Vaswani et al. 2017 §6.1 over the last checkpoints of one
// run, or "model soups" over runs of one initialisation), written as a run
// folder that eval, generate, translate and analyze read like any other.
//
// The runs must agree on the whole model section of their configs (every
// key that decides a shape or how weights are used: an averaged tensor of
// two architectures with equal shapes would mean nothing) and on their
// tokenizers (ids must mean the same text); the error names the first
// differing key or file. The output folder holds the first run's config.json
// (its name set to the output folder's) and tokenizers, and best.safetensors:
// the averaged weights (every parameter and buffer, in float64 then rounded
// to its dtype), no optimizer state and no training state, so it is not a run
// to --resume. Not here: averaging during training (train.ema_decay, the EMA).
#include <algorithm>
#include <cstdio>

#include "autograd/grad_mode.h"
#include "core/factory.h"
#include "core/user_file.h"
#include "datasets/tokenizer.h"
#include "nn/checkpoint.h"
#include "ops/view.h"
#include "tools/cli/cli.h"
#include "tools/cli/commands.h"
#include "tools/train/run_dir.h"

namespace ks::tools {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

constexpr char kUsage[] =
    "usage: keystone average RUN... --out DIR [--checkpoint best|latest]\n"
    "Averages the weights of the runs' checkpoints (best by default) into a new run folder DIR\n"
    "(config.json, tokenizers, best.safetensors) that eval, generate and translate accept.\n"
    "The runs must have one model config and one tokenizer; the error names what differs.\n";

// A run's tokenizer file, through the guard of every user-named file.
std::string file_bytes(const fs::path& p) {
  return read_regular_file(p.string(), data::kMaxTokenizerFileBytes, "average");
}

}  // namespace

int average(const std::vector<std::string>& args) {
  if (cli::help_requested(args, kUsage)) return 0;
  std::vector<std::string> runs, flags;
  for (size_t i = 0; i < args.size(); ++i) {
    const bool flag = args[i].rfind("--", 0) == 0;
    if (flag) {
      flags.push_back(args[i]);
      if (i + 1 < args.size() && args[i].find('=') == std::string::npos) flags.push_back(args[++i]);
    } else {
      runs.push_back(args[i]);
    }
  }
  cli::Flags f(flags, {"out", "checkpoint"});
  if (!f.has("out")) throw cli::UsageError("--out DIR is required");
  if (runs.empty()) throw cli::UsageError("name at least one run folder to average");
  const std::string checkpoint = f.get("checkpoint", "best");
  if (checkpoint != "best" && checkpoint != "latest")
    throw cli::UsageError("--checkpoint: expected best or latest, got '" + checkpoint + "'");
  const RunPaths out{f.get("out", "")};
  if (fs::exists(out.dir) && !fs::is_empty(out.dir))
    throw cli::UsageError("--out " + out.dir.string() + ": the folder exists and is not empty");

  NoGradGuard no_grad;
  LoadedRun first = load_run(runs[0], checkpoint, Weights::Raw, {.cast = kFloat32});
  const json first_model = first.config.model;
  const nn::NamedTensors names = first.model->state_dict();
  std::vector<std::vector<double>> sums;
  for (const auto& [name, t] : names) sums.push_back(t.to_vector<double>());
  std::vector<std::string> sources{first.checkpoint.string()};
  for (size_t r = 1; r < runs.size(); ++r) {
    const RunPaths paths{runs[r]};
    LoadedRun run = load_run(runs[r], checkpoint, Weights::Raw, {.cast = kFloat32});
    const std::vector<std::string> diff = differing_keys(first_model, run.config.model);
    if (!diff.empty()) {
      auto value = [](const json& j, std::string key) {
        std::replace(key.begin(), key.end(), '.', '/');
        const json::json_pointer at("/" + key);
        return j.contains(at) ? j.at(at).dump() : std::string("absent");
      };
      std::string listed;
      for (const std::string& key : diff)
        listed += str(listed.empty() ? "" : ", ", "model.", key, " (", value(run.config.model, key), " vs ",
                      value(first_model, key), ")");
      throw Error(str("average: ", runs[r], " is another architecture than ", runs[0], ": ", listed));
    }
    for (auto [mine, theirs] : {std::pair{first.paths.tokenizer(), paths.tokenizer()},
                                std::pair{first.paths.target_tokenizer(), paths.target_tokenizer()}}) {
      KS_CHECK(fs::exists(mine) == fs::exists(theirs) && (!fs::exists(mine) || file_bytes(mine) == file_bytes(theirs)),
               "average: ", theirs.string(), " differs from ", mine.string(),
               " (the runs' ids must mean the same text)");
    }
    const nn::NamedTensors state = run.model->state_dict();
    KS_CHECK(state.size() == names.size(), "average: ", runs[r], " has ", state.size(), " tensors, ", runs[0], " ",
             names.size());
    size_t i = 0;
    for (auto it = state.begin(), jt = names.begin(); it != state.end(); ++it, ++jt, ++i) {
      KS_CHECK(it->first == jt->first && it->second.sizes() == jt->second.sizes(), "average: ", runs[r], "'s tensor ",
               it->first, " ", describe(it->second), " does not match ", runs[0], "'s ", jt->first, " ",
               describe(jt->second));
      const std::vector<double> v = it->second.to_vector<double>();
      for (size_t k = 0; k < v.size(); ++k) sums[i][k] += v[k];
    }
    sources.push_back(run.checkpoint.string());
  }

  nn::NamedTensors averaged;
  size_t i = 0;
  for (const auto& [name, t] : names) {
    for (double& x : sums[i]) x /= double(runs.size());
    averaged.emplace_back(name, to(from_vector(sums[i++], t.sizes()), t.dtype()));
  }
  first.model->load_state_dict(averaged);

  fs::create_directories(out.dir);
  json config = read_json_file(first.paths.config().string());
  config["name"] = out.dir.filename().string();
  for (const fs::path& p : {first.paths.tokenizer(), first.paths.target_tokenizer()})
    if (fs::exists(p)) fs::copy_file(p, out.dir / p.filename());
  nn::write_file_atomically(out.config().string(), config.dump(2) + "\n");
  nn::save_checkpoint(out.best().string(), *first.model, nullptr,
                      {{"keystone.config", config.dump()}, {"keystone.averaged_from", json(sources).dump()}});
  std::printf("averaged %zu checkpoints into %s\n", sources.size(), out.best().string().c_str());
  return 0;
}

}  // namespace ks::tools
