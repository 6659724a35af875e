// tools/plot.h — `keystone plot RUN_DIR... [--out FILE] [--x step|time]`:
// the training curves of one or more runs in one self-contained SVG file, so
// runs (e.g. attention families on one data set) can be compared side by side.
//
// Reads each run folder's metrics.jsonl (one JSON object per line, written by
// tools/trainer.h):
//   {"split": "train", "step": 120, "epoch": 0, "loss": 3.21, "lr": 3e-4,
//    "tokens_per_s": 5100.0, "elapsed_s": 41.2}
//   {"split": "valid", "step": 200, "loss": 3.05, "accuracy": 0.41, "ppl": 21.1,
//    "exact_match": 0.9, "elapsed_s": 70.3}     (ppl, exact_match: only when measured)
//   {"split": "test", ...}                       (as valid; drawn as a final marker)
// and the run's name from config.json ("name"), else the folder's name.
//
// Not here: running or resuming training; any raster output.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace ks::tools {

struct PlotOptions {
  std::string x_axis = "step";  // "step" or "time" (elapsed_s, in minutes)
  std::string title;            // empty: the run names
};

// Renders the runs' curves as SVG text. Errors (ks::Error) name the folder or
// file and line: a missing metrics.jsonl, a line that is not JSON, a record
// without "split", "step" or "loss".
std::string render_plot_svg(const std::vector<std::filesystem::path>& run_dirs, const PlotOptions& options = {});

// render_plot_svg written to `out` (atomically: a temporary file, then rename).
void write_plot_svg(const std::vector<std::filesystem::path>& run_dirs, const std::filesystem::path& out,
                    const PlotOptions& options = {});

// The `keystone plot` command: positional run folders, --out FILE (default
// RUN_DIR/plot.svg for one run, else plot.svg in the working directory), --x,
// --title, --help. Returns the exit code; throws cli::UsageError / ks::Error.
int plot(const std::vector<std::string>& args);

}  // namespace ks::tools
