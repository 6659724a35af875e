// tools/cli/evaluate.cpp — `keystone eval`: a run's checkpoint measured on one
// split of its data (rebuilt from the run's resolved config with its saved
// tokenizers, so the split is exactly the one it was trained and validated
// on). Prints one JSON object. --mask-heads evaluates with some heads' gates at 0
// (tools/analyze/head_mask.h).
#include <cstdio>

#include "tools/analyze/head_mask.h"
#include "tools/cli/cli.h"
#include "tools/cli/commands.h"
#include "tools/train/data_setup.h"
#include "tools/train/run_dir.h"
#include "tools/train/task.h"

namespace ks::tools {

// What `keystone eval --help` prints.
constexpr char kUsage[] =
    "usage: keystone eval --run DIR [--split valid|test|train] [--checkpoint best|latest|FILE]\n"
    "                     [--batch N] [--batches N] [--decode N] [--mask-heads SITE:HEAD,...]\n"
    "                     [--weights raw|ema] [--set data.train=PATH ...]\n"
    "Loss per prediction, perplexity (token tasks) and accuracy of a run's checkpoint on a split\n"
    "(default: test with the best checkpoint), as one JSON object. --batches limits the batches\n"
    "read (0: all); --decode N also greedily decodes N examples of a seq2seq run (exact match; a\n"
    "seeded sample of the split, the same every time). --set data.train=PATH (or data.valid,\n"
    "data.test) reads a data file that moved from PATH, which must hold the content the run recorded.\n"
    "--mask-heads zeroes the gates of those heads (SITE: the attention module's number, as\n"
    "`keystone analyze` lists them (a decoder LM's layer), or its name; HEAD: the head), e.g. 0:1,2:3.\n"
    "--weights ema evaluates the checkpoint's moving average of the weights (train.ema_decay), as\n"
    "timm's validate.py --use-ema does; the output then says \"weights\": \"ema\".\n";

int evaluate(const std::vector<std::string>& args) {
  if (cli::help_requested(args, kUsage)) return 0;
  cli::Flags f(args, {"run", "split", "checkpoint", "weights", "batch", "batches", "decode", "mask-heads", "set"}, {},
               {"set"});
  if (!f.has("run")) throw cli::UsageError("--run DIR is required");
  const std::string split = f.get("split", "test");
  if (split != "train" && split != "valid" && split != "test")
    throw cli::UsageError("--split: expected train, valid or test, got '" + split + "'");
  const Weights weights = f.get_choice("weights", "raw", {"raw", "ema"}) == "ema" ? Weights::Ema : Weights::Raw;
  LoadedRun run = load_run(f.get("run", ""), f.get("checkpoint", "best"), weights);
  for (const std::string& s : f.get_all("set"))
    std::fprintf(stderr, "note: %s\n", relocate_data_file(run.config.data, s).c_str());
  EvalOptions eo{.batch_size = f.get_int_at_least("batch", run.config.train.batch_size, 1),
                 .max_batches = f.get_int_at_least("batches", 0, 0),
                 .decode_examples = f.get_int_at_least("decode", 0, 0)};
  const std::vector<AttentionSite> sites = attention_sites(*run.model);
  const std::vector<HeadRef> masked =
      f.has("mask-heads") ? parse_head_mask(f.get("mask-heads", ""), sites) : std::vector<HeadRef>();
  if (!masked.empty()) set_head_gates(sites, masked, model_device(*run.model));
  TrainingData data = run_data(run);
  const data::Dataset& set = split == "train"   ? data.splits.train
                             : split == "valid" ? data.splits.valid
                                                : data.splits.test;
  nlohmann::json out = evaluate(*run.model, set, eo).to_json(set.task);
  out["split"] = split;
  out["checkpoint"] = run.checkpoint.string();
  if (weights == Weights::Ema) out["weights"] = "ema";
  if (!masked.empty()) {
    out["masked_heads"] = nlohmann::json::array();
    for (const HeadRef& r : masked)
      out["masked_heads"].push_back({{"site", sites[size_t(r.site)].name}, {"head", r.head}});
  }
  if (run.metadata.count("keystone.step"))
    if (auto step = cli::parse_int(run.metadata.at("keystone.step"))) out["step"] = *step;
  std::printf("%s\n", out.dump().c_str());
  return 0;
}

}  // namespace ks::tools
