// tools/figures/analysis_figures.h — the figures of `keystone analyze` as
// self-contained SVG text: a grid of heatmaps (attention maps, layers ×
// heads; or one matrix of any values, such as a head-by-head divergence) and
// line charts of named series in one or more panels (a pruning curve: loss
// and metric against heads masked, runs overlaid; singular-value spectra on a
// log axis, one series per head).
//
// Every string in the structs is the user's text (token labels come from the
// input) and is escaped here. Invalid input (a cell whose values are not
// T × S, labels not one per row, ...) throws ks::Error naming it.
// Not here: the command and what it measures (tools/analyze/analyze.cpp), writing
// files, the axes and primitives (tools/figures/svg.h), raster output.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tools/figures/svg.h"

namespace ks::tools {

// ---- heatmaps ----

// One (T, S) matrix: T rows (queries, drawn top to bottom), S columns (keys,
// left to right).
struct HeatmapCell {
  int64_t T = 0, S = 0;        // both >= 1
  std::vector<double> values;  // T * S, row-major: values[t * S + s]
};

struct HeatmapGrid {
  std::string title;
  int64_t rows = 1, cols = 1;           // for attention: layers × heads
  std::vector<std::string> row_labels;  // empty, or one per row ("layer 0")
  std::vector<std::string> col_labels;  // empty, or one per column ("head 3")
  std::vector<HeatmapCell> cells;       // rows * cols, row-major: cells[r * cols + c]
  // Token labels along each cell's x axis (keys: S of them) and y axis
  // (queries: T). Empty: none. One list: shared by every cell, drawn on the
  // grid's outer edges only (below the last row, left of the first column).
  // rows * cols lists: one per cell, drawn at every cell. Over 48 tokens
  // only every k-th is labelled (k = ceil(n / 48)).
  std::vector<std::vector<std::string>> x_tokens, y_tokens;
  // The values mapped to the colour map's ends: [0, 1] for probabilities;
  // another (finite, lo < hi) for other matrices. Values outside are clamped
  // to the ends; NaN is drawn grey.
  double lo = 0, hi = 1;
  // Print each value in its square, for cells of at most 16 × 16 (larger
  // ones would not be legible); other cells are drawn without.
  bool print_values = false;
};

// The grid as SVG: the title; each cell's matrix as squares coloured from
// white (lo) to dark blue (hi, ColorBrewer's Blues), quantised to 64 levels;
// the row and column labels; token labels; a colour bar with the range (and a
// NaN swatch when some value is NaN). Equal neighbours in a row merge into
// one run and each colour is one <path> per cell, so size follows the runs:
// 32 cells of 256 × 256 causal attention are ~0.6 MB; noise, with a new
// colour at every entry, ~9 bytes an entry.
std::string heatmap_grid_svg(const HeatmapGrid& g);

// ---- line charts ----

struct LineSeries {
  std::string name;                // the legend's entry; a name in several panels keeps its colour
  std::vector<svg::Point> points;  // in order along the line; NaN and infinite coordinates are skipped
};

struct LinePanel {
  std::string title, x_label, y_label;
  bool log_y = false;  // values a log axis cannot show (zero, negative) are left out
  std::vector<LineSeries> series;
};

struct LineChart {
  std::string title;
  std::vector<LinePanel> panels;  // at least one
  int columns = 0;                // panels per row: 0 puts them all side by side, 1 stacks them
};

// The panels as SVG: framed, with nice ticks, each series a polyline with
// markers (up to 100 points), one legend for the chart under the panels.
std::string line_chart_svg(const LineChart& c);

}  // namespace ks::tools
