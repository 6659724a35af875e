// tools/analyze/analyze.h — `keystone analyze`: what a trained run's attention heads
// do, for every model kind and attention family.
//
//   keystone analyze --run DIR [--split valid|test|train] [--examples N] [--batches N]
//                    [--batch N] [--checkpoint best|latest|FILE] [--tolerance X]
//                    [--decode N] [--out DIR/analysis]
//   keystone analyze --compare RUN_OR_ANALYSIS... [--labels A,B,...] [--out DIR]
//
// It reads the run's config, tokenizers and checkpoint (tools/train/run_dir.h),
// runs the first --batches batches of the split with explicit attention
// weights (tools/analyze/analysis_collect.h), measures head importance and the
// pruning curve over the same batches (tools/analyze/analysis_pruning.h), and writes
// into --out:
//   analysis.json               every number, in the schema of docs/analysis.md
//   attention_maps.safetensors  the raw weights of the --examples examples:
//                               "example<E>/<site>" (heads, queries, keys) float32
//   maps_example<E>.svg         per example: rows = sites, columns = heads
//   redundancy_js.svg           per site: the head × head JS divergences
//   redundancy_cosine.svg       per site: the head × head output cosines
//   pruning.svg                 loss and metric against heads masked
//   spectra.svg                 singular values of each head's score and
//                               attention matrices (first example)
// and prints a short summary. --compare puts several analyses (a run folder
// means DIR/analysis/analysis.json) side by side as a table, the same rows
// as compare.json (what tools/experiments/report.py averages over seeds),
// and as overlaid figures (compare_pruning.svg, compare_sites.svg).
// Errors — a missing run folder, a checkpoint that does not match its
// config, a split without examples, bad head masks or flags — exit with 2
// and a message naming the problem.
// Not here: the statistics (analysis_collect.h, analysis_pruning.h), the
// math (analysis_math.h), the drawing (analysis_figures.h).
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace ks::tools {

struct AnalyzeOptions {
  std::filesystem::path run;
  std::string split = "valid";
  std::string checkpoint = "best";
  int64_t examples = 2;    // maps and spectra
  int64_t batches = 8;     // redundancy, importance, pruning (0: the whole split)
  int64_t batch_size = 0;  // 0: the run's train.batch_size
  int64_t decode = 32;     // seq2seq: greedy decodes per pruning point, for exact match
  double tolerance = 1e-6;
  std::filesystem::path out;  // empty: run/analysis
};

// Runs the analysis and writes the files; returns analysis.json's content.
nlohmann::json run_analysis(const AnalyzeOptions& options);

// The `keystone analyze` command. Returns the exit code; throws cli::UsageError (exit 2).
int analyze(const std::vector<std::string>& args);

}  // namespace ks::tools
