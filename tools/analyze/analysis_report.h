// tools/analyze/analysis_report.h — reading an analysis.json, and the figures of `keystone analyze` and its
// --compare mode (tools/analyze/analyze.h), drawn from an analysis.json document.
//
//   maps_example<E>.svg   one example's weights: rows = sites, columns = heads,
//                         tokens on the axes where the data has text
//   redundancy_js.svg,    per site, the head × head JS and cosine matrices
//   redundancy_cosine.svg
//   pruning.svg           loss, and the headline metric, against heads masked
//   spectra.svg           per site, σ_i / σ_1 of each head's score matrix and
//                         of its attention matrix (first example), log scale
//   compare_pruning.svg   several runs' pruning curves, by fraction of heads masked
//   compare_sites.svg     several runs' per-site JS, cosine and effective rank
// Not here: the measurements (analysis_collect.h, analysis_pruning.h), the
// SVG primitives (svg.h, analysis_figures.h), reading --compare's files
// (analysis_summary.h).
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tools/analyze/analysis_collect.h"

namespace ks::tools {

// Reading an analysis.json that `keystone analyze` has just written (the
// printed summary and the figures share these); --compare reads the user's
// files through tools/analyze/analysis_summary.h instead.
// One head's spectrum of `kind` ("scores" or "attention") in a rank entry;
// an MGK head's scores are its mixture logits. Null when not measured.
const nlohmann::json* head_spectrum(const nlohmann::json& head, const std::string& kind);
// The mean effective rank of that spectrum over a site's heads and examples (NaN: none).
double mean_effective_rank(const nlohmann::json& site, const std::string& kind);
// Heads masked along the pruning curve before the loss first rises above
// (1 + rise) × the unmasked loss.
int64_t heads_maskable(const nlohmann::json& analysis, double rise);

// Writes the figures of one analysis into `out`; returns {"maps": [...],
// "redundancy": ..., "pruning": ..., "spectra": ...}, the file names written.
nlohmann::json write_analysis_figures(const nlohmann::json& analysis, const std::vector<AttentionMap>& maps,
                                      const std::filesystem::path& out);

// `keystone analyze --compare RUN_OR_ANALYSIS... [--labels A,B] [--out DIR]`:
// prints a table of the analyses side by side and writes the compare figures
// into --out (default: the working directory). Returns the exit code; throws
// cli::UsageError (exit 2) for a missing or malformed analysis.
int compare_analyses(const std::vector<std::string>& args);

}  // namespace ks::tools
