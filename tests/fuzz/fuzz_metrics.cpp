// tests/fuzz/fuzz_metrics.cpp — libFuzzer harness: any bytes as run folders'
// metrics.jsonl, drawn by `keystone plot` (tools/figures/plot.h) in memory. The
// first byte picks the options (bit 0: --x time, bit 1: --log-y, bit 2:
// --seeds); the rest, cut at its first '\0', is one or two runs' files,
// named NAME-seed0 and NAME-seed1 so that --seeds merges them. A ks::Error
// is the reader refusing a line (fine); any other exception, a crash, a
// hang (an axis of 10^300 ticks) or a sanitizer report is a bug. What draws
// must be an SVG document.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "tools/figures/plot.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  ks::tools::PlotOptions options;
  options.x_axis = data[0] & 1 ? "time" : "step";
  options.log_y = data[0] & 2;
  options.group_seeds = data[0] & 4;
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  const size_t cut = rest.find('\0');
  std::vector<ks::tools::RunMetrics> runs = {{"run-seed0", "a.jsonl", std::string(rest.substr(0, cut))}};
  if (cut != std::string_view::npos) runs.push_back({"run-seed1", "b.jsonl", std::string(rest.substr(cut + 1))});
  try {
    const std::string svg = ks::tools::render_plot_svg_from_metrics(runs, options);
    if (svg.rfind("<svg", 0) != 0 || svg.find("</svg>") == std::string::npos) __builtin_trap();
  } catch (const ks::Error&) {
  }
  return 0;
}
