// tools/figures/analysis_figures.cpp — `keystone analyze`'s figures: heatmap grids
// (matrices quantised to a 64-level colour map, drawn as one path per colour
// per cell) and line charts of named series on the chart layout of svg.h.
// Not here: what is measured (tools/analyze/analyze.cpp), axes and primitives (tools/figures/svg.h).
#include "tools/figures/analysis_figures.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "core/error.h"

namespace ks::tools {

namespace {

using svg::px;

// ---- the colour map ----

// Values are quantised to kLevels colours (level 0 at lo, the last at hi,
// rounding to the nearest), NaN to one more, grey. 64 levels are more than
// the eye tells apart on a sequential map, and they let equal neighbours
// merge into one run, which keeps 256 × 256 attention maps small.
constexpr int kLevels = 64, kNan = kLevels;

// ColorBrewer's "Blues" (white to dark blue, perceptually even steps, legible
// in grey print), its first stop pure white so that zero is the page.
const std::string& level_colour(int level) {
  static const std::array<std::string, kLevels + 1> colours = [] {
    constexpr std::array<std::array<double, 3>, 9> stops = {{{255, 255, 255},
                                                             {222, 235, 247},
                                                             {198, 219, 239},
                                                             {158, 202, 225},
                                                             {107, 174, 214},
                                                             {66, 146, 198},
                                                             {33, 113, 181},
                                                             {8, 81, 156},
                                                             {8, 48, 107}}};
    std::array<std::string, kLevels + 1> out;
    for (int l = 0; l < kLevels; ++l) {
      const double at = double(l) / (kLevels - 1) * (stops.size() - 1);
      const size_t i = std::min(size_t(at), stops.size() - 2);
      char hex[8];
      int rgb[3];
      for (int k = 0; k < 3; ++k)
        rgb[k] = int(std::lround(stops[i][k] + (at - double(i)) * (stops[i + 1][k] - stops[i][k])));
      std::snprintf(hex, sizeof hex, "#%02x%02x%02x", rgb[0], rgb[1], rgb[2]);
      out[l] = hex;
    }
    out[kNan] = "#a0a0a0";
    return out;
  }();
  return colours[level];
}

// Clamped to [lo, hi] (infinities too), then to the nearest level.
int level_of(double v, double lo, double hi) {
  if (std::isnan(v)) return kNan;
  const double u = (std::clamp(v, lo, hi) - lo) / (hi - lo);
  return int(std::lround(u * (kLevels - 1)));
}

// A T × S matrix of levels drawn with its top-left corner at (x0, y0), each
// entry sx × sy px. Each row is cut into runs of equal level and every run of
// a level goes into that level's one <path>, as a stroke one entry thick
// ("M s t h n": far shorter than a <rect> per run); level 0 is the
// background rect. A smooth or sparse matrix (attention) is then a few runs
// per row; the worst case, a level change at every entry, is ~10 bytes per
// entry.
void draw_levels(std::ostream& os, const std::vector<int>& levels, int64_t T, int64_t S, double x0, double y0,
                 double sx, double sy) {
  svg::rect(os, x0, y0, sx * double(S), sy * double(T), "fill=\"" + level_colour(0) + "\"");
  std::map<int, std::string> paths;
  for (int64_t t = 0; t < T; ++t)
    for (int64_t s = 0, e; s < S; s = e) {
      const int level = levels[t * S + s];
      for (e = s + 1; e < S && levels[t * S + e] == level;) ++e;
      if (level == 0) continue;
      // Appended piece by piece: "M" + std::to_string(...) trips GCC 12's -Wrestrict.
      std::string& d = paths[level];
      d += 'M';
      d += std::to_string(s);
      d += ' ';
      d += std::to_string(t);
      d += 'h';
      d += std::to_string(e - s);
    }
  if (paths.empty()) return;
  // Strokes are centred on their path: the half-entry shift puts row t's on
  // [t, t + 1]. Printed as the background rect is, so the two line up.
  os << "<g transform=\"translate(" << svg::fmt("%g", x0) << ' ' << svg::fmt("%g", y0 + sy / 2) << ") scale("
     << svg::fmt("%g", sx) << ' ' << svg::fmt("%g", sy)
     << ")\" fill=\"none\" stroke-width=\"1\" shape-rendering=\"crispEdges\">\n";
  for (const auto& [level, d] : paths) os << "<path stroke=\"" << level_colour(level) << "\" d=\"" << d << "\"/>\n";
  os << "</g>\n";
}

// ---- the heatmap grid ----

constexpr int64_t kMaxTokenLabels = 48;  // per axis of a cell; more are thinned to every k-th
constexpr size_t kTokenChars = 12;       // longer tokens are cut, with "…"
constexpr int64_t kMaxPrinted = 16;      // cells up to 16 × 16 can print their values

int64_t label_stride(int64_t n) { return (n + kMaxTokenLabels - 1) / kMaxTokenLabels; }

// The token lists of one axis checked against the cells: none, one shared
// by every cell, or one per cell; `length` is the dimension they label.
void check_tokens(const HeatmapGrid& g, const std::vector<std::vector<std::string>>& tokens, const char* name,
                  const char* dimension, int64_t HeatmapCell::*length) {
  const size_t n = g.cells.size();
  KS_CHECK(tokens.empty() || tokens.size() == 1 || tokens.size() == n, "heatmap: ", tokens.size(), " ", name,
           " lists for ", n, " cells; give none, one shared or one per cell");
  for (size_t i = 0; i < n && !tokens.empty(); ++i) {
    const auto& list = tokens.size() == 1 ? tokens[0] : tokens[i];
    KS_CHECK(int64_t(list.size()) == g.cells[i].*length, "heatmap: cell ", i, " has ", g.cells[i].*length, " ",
             dimension, " but ", list.size(), " ", name);
  }
}

void check_grid(const HeatmapGrid& g) {
  KS_CHECK(g.rows >= 1 && g.cols >= 1, "heatmap: a grid of ", g.rows, " x ", g.cols, " cells; need at least 1 x 1");
  KS_CHECK(int64_t(g.cells.size()) == g.rows * g.cols, "heatmap: ", g.cells.size(), " cells for a ", g.rows, " x ",
           g.cols, " grid");
  KS_CHECK(g.row_labels.empty() || int64_t(g.row_labels.size()) == g.rows, "heatmap: ", g.row_labels.size(),
           " row labels for ", g.rows, " rows");
  KS_CHECK(g.col_labels.empty() || int64_t(g.col_labels.size()) == g.cols, "heatmap: ", g.col_labels.size(),
           " column labels for ", g.cols, " columns");
  for (size_t i = 0; i < g.cells.size(); ++i) {
    const HeatmapCell& c = g.cells[i];
    KS_CHECK(c.T >= 1 && c.S >= 1, "heatmap: cell ", i, " is ", c.T, " x ", c.S, "; need at least 1 x 1");
    KS_CHECK(int64_t(c.values.size()) == c.T * c.S, "heatmap: cell ", i, " has ", c.values.size(), " values for ", c.T,
             " x ", c.S);
  }
  KS_CHECK(svg::drawable(g.lo) && svg::drawable(g.hi) && g.lo < g.hi && std::isfinite(g.hi - g.lo),
           "heatmap: the value range [", g.lo, ", ", g.hi, "] must be finite with lo < hi");
  check_tokens(g, g.x_tokens, "x_tokens", "columns", &HeatmapCell::S);
  check_tokens(g, g.y_tokens, "y_tokens", "rows", &HeatmapCell::T);
}

// The widest label (in characters, as drawn) among the lists.
size_t widest(const std::vector<std::vector<std::string>>& lists, size_t cap) {
  size_t w = 0;
  for (const auto& list : lists)
    for (const std::string& s : list) w = std::max(w, std::min(cap, svg::display_chars(s)));
  return w;
}

// One axis's token labels: every k-th, `font` px high, `extent` px from the cell edge at most.
struct TokenAxis {
  bool shown = false, shared = false;
  double font = 0, extent = 0;
};

TokenAxis token_axis(const std::vector<std::vector<std::string>>& lists, int64_t n_max, double pitch) {
  if (lists.empty()) return {};
  // Labels at least 9 px apart (the entry pitch was grown for that), at most 10 px high.
  const double font = std::min(10.0, 0.85 * pitch * double(label_stride(n_max)));
  return {true, lists.size() == 1, font, 0.6 * font * double(widest(lists, kTokenChars)) + 6};
}

void draw_y_tokens(std::ostream& os, const std::vector<std::string>& tokens, double x0, double y0, double pitch,
                   double font) {
  const int64_t k = label_stride(int64_t(tokens.size()));
  for (int64_t t = 0; t < int64_t(tokens.size()); t += k)
    svg::text(os, x0 - 3, y0 + (double(t) + 0.5) * pitch + 0.35 * font, svg::xml_escape(tokens[t], kTokenChars),
              "text-anchor=\"end\" font-size=\"" + svg::fmt("%.3g", font) + "\"");
}

// Rotated to read upwards, ending just below the cell.
void draw_x_tokens(std::ostream& os, const std::vector<std::string>& tokens, double x0, double y1, double pitch,
                   double font) {
  const int64_t k = label_stride(int64_t(tokens.size()));
  for (int64_t s = 0; s < int64_t(tokens.size()); s += k)
    os << "<text transform=\"translate(" << px(x0 + (double(s) + 0.5) * pitch + 0.35 * font) << ' ' << px(y1 + 3)
       << ") rotate(-90)\" text-anchor=\"end\" font-size=\"" << svg::fmt("%.3g", font) << "\">"
       << svg::xml_escape(tokens[s], kTokenChars) << "</text>\n";
}

void draw_values(std::ostream& os, const HeatmapCell& c, const std::vector<int>& levels, double x0, double y0,
                 double pitch) {
  const double font = std::min(11.0, pitch / 3.6);
  for (int64_t t = 0; t < c.T; ++t)
    for (int64_t s = 0; s < c.S; ++s) {
      const double v = c.values[t * c.S + s];
      const int level = levels[t * c.S + s];
      svg::text(os, x0 + (double(s) + 0.5) * pitch, y0 + (double(t) + 0.5) * pitch + 0.35 * font,
                std::isnan(v) ? "NaN" : svg::tick_label(v),
                "text-anchor=\"middle\" font-size=\"" + svg::fmt("%.3g", font) + "\" fill=\"" +
                    (level != kNan && level > kLevels * 5 / 8 ? "white" : "#222") + "\"");
    }
}

// The colour map from lo (bottom) to hi (top) beside the grid, with nice
// ticks inside the range; a NaN swatch below when some value is NaN.
// Returns its bottom.
double draw_colour_bar(std::ostream& os, double x, double y, double height, double lo, double hi, bool any_nan) {
  std::vector<int> levels(kLevels);
  for (int l = 0; l < kLevels; ++l) levels[l] = kLevels - 1 - l;
  draw_levels(os, levels, kLevels, 1, x, y, 14, height / kLevels);
  svg::rect(os, x, y, 14, height, R"(fill="none" stroke="#888")");
  const double slack = (hi - lo) * 1e-9;
  for (double t : svg::linear_axis(lo, hi).ticks) {
    if (t < lo - slack || t > hi + slack) continue;
    const double ty = y + height * (1 - (t - lo) / (hi - lo));
    svg::line(os, x + 14, ty, x + 18, ty, R"(stroke="#888")");
    svg::text(os, x + 21, ty + 4, svg::tick_label(t));
  }
  if (!any_nan) return y + height;
  svg::rect(os, x, y + height + 12, 14, 12, "fill=\"" + level_colour(kNan) + "\"");
  svg::text(os, x + 21, y + height + 22, "NaN");
  return y + height + 24;
}

}  // namespace

std::string heatmap_grid_svg(const HeatmapGrid& g) {
  check_grid(g);
  int64_t T_max = 0, S_max = 0;
  bool small = false, any_nan = false;
  for (const HeatmapCell& c : g.cells) {
    T_max = std::max(T_max, c.T), S_max = std::max(S_max, c.S);
    small = small || (c.T <= kMaxPrinted && c.S <= kMaxPrinted);
    any_nan = any_nan || std::any_of(c.values.begin(), c.values.end(), [](double v) { return std::isnan(v); });
  }
  // Entries are square, `pitch` px: the longer side of a cell 240 px (an
  // entry at most 40), grown so labelled tokens are 9 px apart and printed
  // values fit (28 px).
  double pitch = std::min(40.0, 240.0 / double(std::max(T_max, S_max)));
  if (!g.x_tokens.empty()) pitch = std::max(pitch, 9.0 / double(label_stride(S_max)));
  if (!g.y_tokens.empty()) pitch = std::max(pitch, 9.0 / double(label_stride(T_max)));
  const bool print = g.print_values && small;
  if (print) pitch = std::max(pitch, 28.0);
  const TokenAxis xt = token_axis(g.x_tokens, S_max, pitch), yt = token_axis(g.y_tokens, T_max, pitch);

  // Each cell sits in a slot of the largest cell's size, with room for its
  // own token labels when they are per cell; shared ones sit in the margins.
  constexpr double kGap = 16;
  const double cell_w = pitch * double(S_max), cell_h = pitch * double(T_max);
  const double slot_w = cell_w + kGap + (yt.shown && !yt.shared ? yt.extent : 0);
  const double slot_h = cell_h + kGap + (xt.shown && !xt.shared ? xt.extent : 0);
  size_t row_chars = 0;
  for (const std::string& s : g.row_labels) row_chars = std::max(row_chars, svg::display_chars(s));
  const double row_label_w = g.row_labels.empty() ? 0 : 7.0 * double(row_chars) + 10;
  const double left = 20 + row_label_w + yt.extent, top = 44 + (g.col_labels.empty() ? 0 : 18);
  auto cell_x = [&](int64_t c) { return left + slot_w * double(c); };
  auto cell_y = [&](int64_t r) { return top + slot_h * double(r); };

  std::ostringstream body;
  for (int64_t c = 0; c < g.cols && !g.col_labels.empty(); ++c)
    svg::text(body, cell_x(c) + cell_w / 2, top - 8, svg::xml_escape(g.col_labels[c]), R"(text-anchor="middle")");
  for (int64_t r = 0; r < g.rows && !g.row_labels.empty(); ++r)
    svg::text(body, left - yt.extent - 8, cell_y(r) + cell_h / 2 + 4, svg::xml_escape(g.row_labels[r]),
              R"(text-anchor="end")");
  for (int64_t r = 0; r < g.rows; ++r)
    for (int64_t c = 0; c < g.cols; ++c) {
      const size_t i = size_t(r * g.cols + c);
      const HeatmapCell& cell = g.cells[i];
      const double x0 = cell_x(c), y0 = cell_y(r), y1 = y0 + pitch * double(cell.T);
      std::vector<int> levels(cell.values.size());
      for (size_t k = 0; k < levels.size(); ++k) levels[k] = level_of(cell.values[k], g.lo, g.hi);
      body << "<g class=\"cell\">\n";
      draw_levels(body, levels, cell.T, cell.S, x0, y0, pitch, pitch);
      svg::rect(body, x0, y0, pitch * double(cell.S), pitch * double(cell.T), R"(fill="none" stroke="#888")");
      if (print && cell.T <= kMaxPrinted && cell.S <= kMaxPrinted) draw_values(body, cell, levels, x0, y0, pitch);
      if (yt.shown && (!yt.shared || c == 0))
        draw_y_tokens(body, g.y_tokens[yt.shared ? 0 : i], x0, y0, pitch, yt.font);
      if (xt.shown && (!xt.shared || r == g.rows - 1))
        draw_x_tokens(body, g.x_tokens[xt.shared ? 0 : i], x0, y1, pitch, xt.font);
      body << "</g>\n";
    }
  const double grid_right = cell_x(g.cols - 1) + cell_w, grid_bottom = cell_y(g.rows - 1) + cell_h + xt.extent;
  const double bar_x = grid_right + 30, bar_h = std::clamp(grid_bottom - top, 120.0, 240.0);
  const double bar_bottom = draw_colour_bar(body, bar_x, top, bar_h, g.lo, g.hi, any_nan);

  const double title_w = 9.0 * double(svg::display_chars(g.title)) + 40;  // ~9 px a character at 16 px bold
  const int width = int(std::ceil(std::max(bar_x + 80, title_w)));
  const int height = int(std::ceil(std::max(grid_bottom, bar_bottom + 6) + 20));
  return svg::document(width, height, svg::xml_escape(g.title), body.str());
}

// ---- line charts ----

namespace {

// Series past the tenth share a colour with an earlier one, so they differ in dash.
std::string series_attrs(size_t i) {
  static const char* dashes[] = {"", R"( stroke-dasharray="7 3")", R"( stroke-dasharray="2 2")",
                                 R"( stroke-dasharray="9 3 2 3")"};
  return std::string(R"(class="series" stroke-width="1.8")") + dashes[(i / 10) % 4];
}

constexpr size_t kMaxMarked = 100;  // denser series get a line without markers

}  // namespace

std::string line_chart_svg(const LineChart& chart) {
  KS_CHECK(!chart.panels.empty(), "line chart: no panels");
  KS_CHECK(chart.columns >= 0, "line chart: columns must be >= 0, got ", chart.columns);
  const size_t n = chart.panels.size();
  const size_t columns = chart.columns == 0 ? n : std::min(n, size_t(chart.columns));
  // A name's colour is its place among the chart's names, in order of appearance.
  std::map<std::string, size_t> index;
  std::vector<std::string> names;
  for (const LinePanel& p : chart.panels)
    for (const LineSeries& s : p.series)
      if (index.emplace(s.name, names.size()).second) names.push_back(s.name);

  std::ostringstream body;
  for (size_t k = 0; k < n; ++k) {
    const LinePanel& lp = chart.panels[k];
    std::vector<svg::Series> drawn(lp.series.size());  // without NaN and infinities
    std::vector<const svg::Series*> all;
    for (size_t i = 0; i < lp.series.size(); ++i) {
      for (const svg::Point& p : lp.series[i].points)
        if (svg::drawable(p.x) && svg::drawable(p.y)) drawn[i].push_back(p);
      all.push_back(&drawn[i]);
    }
    // The y axis first: on a log one, the points it cannot show are dropped
    // before the x axis is fitted to what is drawn.
    const svg::Axis y = svg::value_axis(all, &svg::Point::y, lp.log_y ? svg::Scale::Log : svg::Scale::Linear);
    if (y.log)
      for (svg::Series& s : drawn) std::erase_if(s, [](svg::Point p) { return !svg::on_log_axis(p.y); });
    const svg::Panel panel{svg::panel_box(k, columns), svg::value_axis(all, &svg::Point::x, svg::Scale::Linear), y};
    svg::frame(body, panel, svg::xml_escape(lp.title), svg::xml_escape(lp.x_label),
               svg::xml_escape(lp.y_label) + (panel.y.log ? " (log)" : ""), svg::ylabel_gap(panel));
    for (size_t i = 0; i < drawn.size(); ++i) {
      const size_t id = index.at(lp.series[i].name);
      svg::Series pixels;
      for (const svg::Point& p : drawn[i]) pixels.push_back(panel.to_px(p));
      if (pixels.size() >= 2) svg::polyline(body, pixels, svg::colour(id), series_attrs(id));
      if (pixels.size() <= kMaxMarked)
        for (const svg::Point& p : pixels) svg::circle(body, p.x, p.y, 2, svg::colour(id));
    }
  }
  std::vector<svg::LegendEntry> entries;
  for (size_t id = 0; id < names.size(); ++id) {
    auto sample = [id](std::ostream& os, double x, double y) {
      svg::line(os, x, y, x + 24, y, std::string("stroke=\"") + svg::colour(id) + "\" " + series_attrs(id));
      svg::circle(os, x + 12, y, 2, svg::colour(id));
    };
    entries.push_back({sample, names[id]});
  }
  const double top = svg::legend_top(n, columns);
  const int rows = entries.empty() ? 0 : svg::legend(body, entries, top);
  return svg::document(1000, int(top) + 20 * rows, svg::xml_escape(chart.title), body.str());
}

}  // namespace ks::tools
