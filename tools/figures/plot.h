// tools/figures/plot.h — `keystone plot RUN_DIR... [--out FILE] [--x step|time]
// [--labels A,B] [--log-y]`: the training curves of one or more runs in one
// self-contained SVG file, so runs (e.g. attention families on one data set)
// can be compared side by side.
//
// Reads each run folder's metrics.jsonl (one JSON object per line, written by
// tools/train/trainer.h):
//   {"split": "train", "step": 120, "epoch": 0, "loss": 3.21, "lr": 3e-4,
//    "tokens_per_s": 5100.0, "elapsed_s": 41.2, "grad_norm": 0.8, "bpb": 1.9}
//   {"split": "valid", "step": 200, "loss": 3.05, "accuracy": 0.41, "ppl": 21.1,
//    "bpb": 1.8, "exact_match": 0.9, "elapsed_s": 70.3}
//   {"split": "test", ...}  (as valid, over the whole test split; the last one is drawn as a final marker)
// grad_norm, bpb, ppl and exact_match appear only where measured. The panels:
// loss (always), accuracy with exact match, bits per byte (a language
// model's loss in units comparable across tokenizers), gradient norm (the
// pre-clipping norm); each but the first only when some run has values for
// it. The run's name is --labels' entry, else config.json's "name", else the
// folder's name. A log axis leaves out values it cannot show (zero,
// negative); NaN and infinities are never drawn.
//
// Not here: running or resuming training; any raster output.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace ks::tools {

struct PlotOptions {
  std::string x_axis = "step";      // "step" or "time" (elapsed_s, in minutes)
  std::string title;                // empty: the run names
  std::vector<std::string> labels;  // empty, or one legend name per run folder, in order
  bool log_y = false;               // loss and bits per byte on a log axis (else log only when over 20x wide)
  // Runs named NAME-seedN (after --labels) become one curve per NAME: the
  // mean over its seeds at the x values they all recorded, in a band of ± one
  // sample standard deviation (with two seeds or more).
  bool group_seeds = false;
};

// Renders the runs' curves as SVG text. Errors (ks::Error) name the folder or
// file and line: a missing metrics.jsonl (or one that is not a regular file,
// or too large), a line that is not JSON, a record without "split", "step"
// or "loss"; labels not one per run folder.
std::string render_plot_svg(const std::vector<std::filesystem::path>& run_dirs, const PlotOptions& options = {});

// One run's metrics.jsonl as text: `name` for the legend, `file` for errors.
struct RunMetrics {
  std::string name, file, text;
};
// The same from metrics already read (render_plot_svg reads each folder's
// metrics.jsonl, a regular file of at most kMaxMetricsBytes, and its name).
std::string render_plot_svg_from_metrics(const std::vector<RunMetrics>& runs, const PlotOptions& options = {});

// render_plot_svg written to `out` (atomically: a temporary file, then rename).
void write_plot_svg(const std::vector<std::filesystem::path>& run_dirs, const std::filesystem::path& out,
                    const PlotOptions& options = {});

// The `keystone plot` command: positional run folders, --out FILE (default
// RUN_DIR/plot.svg for one run, else plot.svg in the working directory), --x,
// --title, --labels (comma-separated), --log-y, --help. Returns the exit code; throws cli::UsageError / ks::Error.
int plot(const std::vector<std::string>& args);

}  // namespace ks::tools
