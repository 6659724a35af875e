// tests/tools/test_analysis_figures.cpp — `keystone analyze`'s figures
// (tools/figures/analysis_figures.h) as text: well-formed XML (a small stack-based
// checker below; `keystone plot`'s figure is held to it too), the number of
// cells, labels and series drawn, escaping of user text, colour runs and
// clamping, NaN and infinities, log axes with zeros, thinned token labels,
// file size on attention-sized grids, and the errors for invalid input.
// Not here: how the figures look (checked by eye), the axes' ticks (test_plot.cpp).
#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "core/error.h"
#include "datasets/data_testing.h"
#include "tools/figures/analysis_figures.h"
#include "tools/figures/plot.h"

using namespace ks::tools;
using ks::testing::error_of;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + what.size())) ++n;
  return n;
}

bool has(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

// "" when `x` is well-formed XML with one <svg> root, else what is wrong and
// where: every element closed in order, attributes quoted and not repeated,
// no raw '<' or stray '&' in text or values, valid UTF-8 without control
// characters. (No comments, CDATA or declarations: the figures write none.)
std::string xml_problem(const std::string& x) {
  for (size_t i = 0; i < x.size();) {  // UTF-8, by its bit patterns; no C0 controls but tab and newlines
    const unsigned char c = x[i];
    const size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0) return ks::str("a byte that starts no UTF-8 character at ", i);
    for (size_t k = 1; k < n; ++k)
      if (i + k >= x.size() || (static_cast<unsigned char>(x[i + k]) & 0xC0) != 0x80)
        return ks::str("a truncated UTF-8 character at ", i);
    if (c < 0x20 && c != '\n' && c != '\t' && c != '\r') return ks::str("a control character at ", i);
    i += n;
  }
  auto name_at = [&](size_t& i) {
    const size_t start = i;
    auto in_name = [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == ':' || c == '_';
    };
    while (i < x.size() && in_name(x[i])) ++i;
    return x.substr(start, i - start);
  };
  auto entity_at = [&](size_t i) {  // an entity reference starts at x[i] == '&'
    for (const char* e : {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"})
      if (x.compare(i, std::strlen(e), e) == 0) return true;
    return false;
  };
  auto space = [&](size_t& i) {
    while (i < x.size() && std::isspace(static_cast<unsigned char>(x[i]))) ++i;
  };
  std::vector<std::string> open;
  bool root_done = false;
  for (size_t i = 0; i < x.size();) {
    if (x[i] != '<') {
      if (x[i] == '&' && !entity_at(i)) return ks::str("a raw '&' at ", i);
      if (open.empty() && !std::isspace(static_cast<unsigned char>(x[i])))
        return ks::str("text outside the root at ", i);
      ++i;
      continue;
    }
    if (x.compare(i, 2, "</") == 0) {
      i += 2;
      const std::string name = name_at(i);
      space(i);
      if (i >= x.size() || x[i] != '>') return ks::str("an unfinished closing tag </", name, ">");
      if (open.empty() || open.back() != name)
        return ks::str("</", name, "> at ", i, " closes <", open.empty() ? "" : open.back(), ">");
      open.pop_back();
      root_done = open.empty();
      ++i;
      continue;
    }
    ++i;
    const std::string name = name_at(i);
    if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return ks::str("a raw '<' at ", i - 1);
    if (root_done || (open.empty() && name != "svg")) return ks::str("<", name, "> at ", i, " is not in the one <svg>");
    std::vector<std::string> attributes;
    for (;;) {
      space(i);
      if (x.compare(i, 2, "/>") == 0) {
        i += 2;
        root_done = open.empty();
        break;
      }
      if (i < x.size() && x[i] == '>') {
        open.push_back(name), ++i;
        break;
      }
      const std::string attr = name_at(i);
      if (attr.empty()) return ks::str("junk in <", name, "> at ", i);
      if (std::find(attributes.begin(), attributes.end(), attr) != attributes.end())
        return ks::str("attribute ", attr, " twice in <", name, ">");
      attributes.push_back(attr);
      space(i);
      if (i >= x.size() || x[i] != '=') return ks::str("attribute ", attr, " of <", name, "> has no value");
      ++i;
      space(i);
      if (i >= x.size() || (x[i] != '"' && x[i] != '\'')) return ks::str("attribute ", attr, " is not quoted");
      const char quote = x[i++];
      for (; i < x.size() && x[i] != quote; ++i) {
        if (x[i] == '<') return ks::str("a raw '<' in attribute ", attr, " at ", i);
        if (x[i] == '&' && !entity_at(i)) return ks::str("a raw '&' in attribute ", attr, " at ", i);
      }
      if (i++ >= x.size()) return ks::str("attribute ", attr, " is not closed");
    }
  }
  if (!open.empty()) return "<" + open.back() + "> is never closed";
  if (!root_done) return "no <svg> root";
  return "";
}

// A T × S cell with values f(t, s).
template <class F> HeatmapCell cell(int64_t T, int64_t S, F f) {
  HeatmapCell c{T, S, {}};
  for (int64_t t = 0; t < T; ++t)
    for (int64_t s = 0; s < S; ++s) c.values.push_back(f(t, s));
  return c;
}

// Causal attention rows, peaked at the diagonal and spread over the prefix, as a trained head's often are.
HeatmapCell causal_attention(int64_t T, double sharpness) {
  HeatmapCell c{T, T, std::vector<double>(size_t(T * T), 0.0)};
  for (int64_t t = 0; t < T; ++t) {
    double sum = 0;
    for (int64_t s = 0; s <= t; ++s) sum += std::exp(-sharpness * double(t - s));
    for (int64_t s = 0; s <= t; ++s) c.values[t * T + s] = std::exp(-sharpness * double(t - s)) / sum;
  }
  return c;
}

std::vector<std::string> numbered(const std::string& prefix, int64_t n) {
  std::vector<std::string> out;
  for (int64_t i = 0; i < n; ++i) out.push_back(prefix + std::to_string(i));
  return out;
}

// The d of the <path> drawn in `colour`, or "" when there is none.
std::string path_of(const std::string& svg, const std::string& colour) {
  const std::string key = "<path stroke=\"" + colour + "\" d=\"";
  const size_t at = svg.find(key);
  if (at == std::string::npos) return "";
  const size_t start = at + key.size();
  return svg.substr(start, svg.find('"', start) - start);
}

// The colour map's ends and NaN's grey (tools/figures/analysis_figures.cpp).
const std::string kWhite = "#ffffff", kDarkest = "#08306b", kGrey = "#a0a0a0";
const std::string kOdd = "<b>&\"", kOddEscaped = "&lt;b&gt;&amp;&quot;";

}  // namespace

TEST_CASE("svg: the XML checker itself tells well-formed from broken") {
  CHECK(xml_problem("<svg a=\"1\">\n<g><text x=\"1\">a &amp; b</text></g><rect/></svg>\n") == "");
  for (const char* bad : {"<svg><g></svg>", "<svg><g></g>", "<svg a=1></svg>", "<svg>a < b</svg>", "<svg>a & b</svg>",
                          "<svg a=\"<\"></svg>", "<svg a=\"1\" a=\"2\"></svg>", "<svg></svg><svg></svg>", "<g></g>",
                          "<svg>\xff</svg>", "<svg>\x01</svg>", "text"})
    CHECK_MESSAGE(xml_problem(bad) != "", bad);
}

TEST_CASE("svg: a heatmap grid draws one cell per matrix and a label per row and column") {
  HeatmapGrid g;
  g.title = "attention, layers x heads";
  g.rows = 2, g.cols = 3;
  g.row_labels = {"layer 0", "layer 1"};
  g.col_labels = {"head 0", "head 1", "head 2"};
  for (int i = 0; i < 6; ++i) g.cells.push_back(causal_attention(12, 0.3 * (i + 1)));
  const std::string svg = heatmap_grid_svg(g);
  CHECK(xml_problem(svg) == "");
  CHECK(svg.rfind("<svg", 0) == 0);
  CHECK(count(svg, "<g class=\"cell\">") == 6);
  for (const char* label :
       {">layer 0</text>", ">layer 1</text>", ">head 0</text>", ">head 2</text>", ">attention, layers x heads</text>"})
    CHECK_MESSAGE(count(svg, label) == 1, label);
  // The colour bar: 0 to 1 with nice ticks, and no NaN swatch without NaN.
  for (const char* tick : {">0</text>", ">0.4</text>", ">1</text>"}) CHECK_MESSAGE(has(svg, tick), tick);
  CHECK(!has(svg, ">NaN</text>"));
  CHECK(!has(svg, "nan"));
  // Without labels the grid is drawn all the same.
  g.row_labels.clear(), g.col_labels.clear();
  const std::string bare = heatmap_grid_svg(g);
  CHECK(xml_problem(bare) == "");
  CHECK(!has(bare, "layer 0"));
}

TEST_CASE("svg: a 1x1 heatmap clamps values outside the range and draws NaN grey") {
  HeatmapGrid g;
  g.cells = {{2, 3, {0.0, 1.0, kNaN, 2.0, -1.0, kInf}}};
  const std::string svg = heatmap_grid_svg(g);
  CHECK(xml_problem(svg) == "");
  CHECK(count(svg, "<g class=\"cell\">") == 1);
  // One path per colour, one run per entry here: 2 and +inf clamp to 1, -1 to 0 (the background).
  CHECK(path_of(svg, kDarkest) == "M1 0h1M0 1h1M2 1h1");
  CHECK(path_of(svg, kGrey) == "M2 0h1");
  CHECK(has(svg, ">NaN</text>"));  // the colour bar's NaN swatch
  CHECK(!has(svg, "nan"));
  CHECK(!has(svg, "inf"));
}

TEST_CASE("svg: equal neighbours in a row merge into one run and zeros are the background") {
  HeatmapGrid g;
  g.cells = {cell(3, 8, [](int64_t t, int64_t s) { return t == 1 ? 0.5 : t == 2 && s >= 4 ? 1.0 : 0.0; })};
  const std::string svg = heatmap_grid_svg(g);
  CHECK(xml_problem(svg) == "");
  CHECK(has(svg, "d=\"M0 1h8\""));
  CHECK(path_of(svg, kDarkest).find("M4 2h4") == 0);
  CHECK(!has(svg, "<path stroke=\"" + kWhite));
}

TEST_CASE("svg: heatmap token labels are escaped, cut when long, and thinned beyond 48") {
  HeatmapGrid g;
  g.cells = {cell(3, 3, [](int64_t, int64_t) { return 0.3; })};
  g.x_tokens = {{kOdd, "b", "a-very-long-token-indeed"}};
  g.y_tokens = {{"q0", kOdd, "\xff"}};  // a byte-level token that is not UTF-8 on its own
  std::string svg = heatmap_grid_svg(g);
  CHECK(xml_problem(svg) == "");
  CHECK(count(svg, ">" + kOddEscaped + "</text>") == 2);
  CHECK(!has(svg, "<b>"));
  CHECK(has(svg, ">a-very-long\xE2\x80\xA6</text>"));  // 11 characters and "…"
  CHECK(has(svg, ">\xEF\xBF\xBD</text>"));             // U+FFFD

  // 2 x 2 cells of 200 tokens, shared: every 5th labelled, below the last row and left of the first column.
  g = {};
  g.rows = 2, g.cols = 2;
  for (int i = 0; i < 4; ++i) g.cells.push_back(causal_attention(200, 0.5));
  g.x_tokens = {numbered("k", 200)};
  g.y_tokens = {numbered("q", 200)};
  svg = heatmap_grid_svg(g);
  CHECK(xml_problem(svg) == "");
  CHECK(count(svg, ">k0</text>") == 2);  // under each column of the last row
  CHECK(count(svg, ">q0</text>") == 2);  // beside each row's first cell
  CHECK(count(svg, ">k5</text>") == 2);
  CHECK(count(svg, ">k195</text>") == 2);
  CHECK(!has(svg, ">k1</text>"));
  CHECK(!has(svg, ">q199</text>"));
  CHECK(count(svg, ">k") == 2 * 40);
  CHECK(count(svg, ">q") == 2 * 40);
  // One list per cell: every cell labels its own axes.
  g.x_tokens.assign(4, numbered("k", 200));
  g.y_tokens.assign(4, numbered("q", 200));
  svg = heatmap_grid_svg(g);
  CHECK(xml_problem(svg) == "");
  CHECK(count(svg, ">k0</text>") == 4);
  CHECK(count(svg, ">q") == 4 * 40);
}

TEST_CASE("svg: a divergence matrix shows its range on the colour bar and prints small matrices' values") {
  HeatmapGrid g;
  g.title = "head divergence";
  g.lo = 0, g.hi = 3;
  g.print_values = true;
  g.col_labels = {kOdd};
  g.row_labels = {kOdd};
  g.cells = {cell(4, 4, [](int64_t t, int64_t s) { return t == s ? 0.0 : 0.25 * double(t + s); })};
  std::string svg = heatmap_grid_svg(g);
  CHECK(xml_problem(svg) == "");
  for (const char* tick : {">0</text>", ">1.5</text>", ">3</text>"}) CHECK_MESSAGE(has(svg, tick), tick);
  CHECK(count(svg, ">1.25</text>") == 2);   // (2, 3) and (3, 2)
  CHECK(count(svg, ">0</text>") == 4 + 1);  // the diagonal and the colour bar's tick
  CHECK(count(svg, ">" + kOddEscaped + "</text>") == 2);
  const std::string printed = "text-anchor=\"middle\" font-size=\"";  // a value's text, or the title's
  CHECK(count(svg, printed) == 16 + 1);
  // Values only up to 16 x 16: a larger matrix is drawn without them.
  g.cells = {cell(17, 17, [](int64_t t, int64_t s) { return 0.25 * double(t + s) / 8; })};
  svg = heatmap_grid_svg(g);
  CHECK(!has(svg, ">1.25</text>"));
  CHECK(count(svg, printed) == 1);
}

TEST_CASE("svg: attention-sized heatmap grids stay small") {
  // 4 layers x 8 heads of 256 x 256 causal attention: ~2M values.
  HeatmapGrid g;
  g.rows = 4, g.cols = 8;
  for (int i = 0; i < 32; ++i) g.cells.push_back(causal_attention(256, 0.05 + 0.1 * (i % 8)));
  g.x_tokens = g.y_tokens = {numbered("t", 256)};
  const std::string svg = heatmap_grid_svg(g);
  CHECK(xml_problem(svg) == "");
  MESSAGE("32 cells of 256 x 256: ", svg.size(), " bytes");
  CHECK(svg.size() < 4'000'000);
}

TEST_CASE("svg: invalid heatmap grids are refused with the reason") {
  HeatmapGrid g;
  g.rows = 1, g.cols = 2;
  g.cells = {cell(2, 2, [](int64_t, int64_t) { return 0.0; })};
  CHECK(error_of([&] { heatmap_grid_svg(g); }) == "heatmap: 1 cells for a 1 x 2 grid");
  g.cols = 1;
  g.cells[0].values.pop_back();
  CHECK(error_of([&] { heatmap_grid_svg(g); }) == "heatmap: cell 0 has 3 values for 2 x 2");
  g.cells[0].values.push_back(0);
  g.row_labels = {"a", "b"};
  CHECK(error_of([&] { heatmap_grid_svg(g); }) == "heatmap: 2 row labels for 1 rows");
  g.row_labels.clear();
  g.x_tokens = {{"a", "b", "c"}};
  CHECK(error_of([&] { heatmap_grid_svg(g); }) == "heatmap: cell 0 has 2 columns but 3 x_tokens");
  g.x_tokens.clear();
  g.y_tokens = {{"a", "b"}, {"a", "b"}};
  CHECK(error_of([&] { heatmap_grid_svg(g); }).find("2 y_tokens lists for 1 cells") != std::string::npos);
  g.y_tokens.clear();
  g.lo = 1, g.hi = 1;
  CHECK(error_of([&] { heatmap_grid_svg(g); }) == "heatmap: the value range [1, 1] must be finite with lo < hi");
  g.lo = 0;
  g.cells = {{0, 3, {}}};
  CHECK(error_of([&] { heatmap_grid_svg(g); }) == "heatmap: cell 0 is 0 x 3; need at least 1 x 1");
}

// ---- line charts ----

namespace {

// The SVG before the legend, whose samples would be counted too.
std::string before_legend(const std::string& svg) { return svg.substr(0, svg.find("<g class=\"legend\"")); }
std::string legend_of(const std::string& svg) { return svg.substr(svg.find("<g class=\"legend\"")); }

// The vertices of every polyline before the legend, one list per polyline.
std::vector<size_t> polyline_sizes(const std::string& svg) {
  const std::string c = before_legend(svg);
  std::vector<size_t> out;
  for (size_t at = c.find("points=\""); at != std::string::npos; at = c.find("points=\"", at + 1))
    out.push_back(count(c.substr(at, c.find('"', at + 8) - at), ","));
  return out;
}

// A pruning curve: loss and accuracy against heads masked, for `runs` runs.
LineChart pruning(int runs) {
  LineChart c;
  c.title = "pruning";
  c.panels = {{"loss", "heads masked", "loss", false, {}}, {"accuracy", "heads masked", "accuracy", false, {}}};
  for (int r = 0; r < runs; ++r) {
    LineSeries loss{"run " + std::to_string(r), {}}, accuracy{"run " + std::to_string(r), {}};
    for (int k = 0; k <= 8; ++k) {
      loss.points.push_back({double(k), 2.0 + 0.1 * k * k + r});
      accuracy.points.push_back({double(k), 0.9 - 0.05 * k - 0.1 * r});
    }
    c.panels[0].series.push_back(loss);
    c.panels[1].series.push_back(accuracy);
  }
  return c;
}

}  // namespace

TEST_CASE("svg: a line chart draws each series as a polyline with markers and one legend for its panels") {
  const std::string svg = line_chart_svg(pruning(3));
  CHECK(xml_problem(svg) == "");
  const std::string c = before_legend(svg);
  CHECK(count(c, "<polyline") == 6);
  CHECK(count(c, "<circle") == 6 * 9);
  CHECK(polyline_sizes(svg) == std::vector<size_t>(6, 9));
  for (const char* label : {">pruning</text>", ">loss</text>", ">accuracy</text>", ">heads masked</text>"})
    CHECK_MESSAGE(has(svg, label), label);
  // One legend entry per name, and a name keeps its colour across panels.
  const std::string legend = legend_of(svg);
  for (const char* name : {">run 0</text>", ">run 1</text>", ">run 2</text>"}) CHECK(count(legend, name) == 1);
  CHECK(count(c, "stroke=\"#1f77b4\"") == 2);
  CHECK(count(c, "stroke=\"#2ca02c\"") == 2);
  // Side by side by default; stacked with columns = 1.
  CHECK(has(svg, "<rect x=\"70\" y=\"60\" width=\"400\" height=\"270\""));
  CHECK(has(svg, "<rect x=\"575\" y=\"60\" width=\"400\" height=\"270\""));
  LineChart stacked = pruning(1);
  stacked.columns = 1;
  const std::string s = line_chart_svg(stacked);
  CHECK(has(s, "<rect x=\"70\" y=\"60\" width=\"905\" height=\"270\""));
  CHECK(has(s, "<rect x=\"70\" y=\"400\" width=\"905\" height=\"270\""));
}

TEST_CASE("svg: a line chart skips NaN and infinite points and draws an empty series as nothing") {
  LineChart c;
  c.panels = {{"p",
               "x",
               "y",
               false,
               {{"holes", {{0, 1}, {1, kNaN}, {kInf, 2}, {2, -kInf}, {3, 1.5}, {kNaN, kNaN}}}, {"empty", {}}}}};
  std::string svg = line_chart_svg(c);
  CHECK(xml_problem(svg) == "");
  CHECK(polyline_sizes(svg) == std::vector<size_t>{2});
  CHECK(count(before_legend(svg), "<circle") == 2);
  CHECK(has(legend_of(svg), ">empty</text>"));  // named, so listed, though it has nothing to draw
  CHECK(!has(svg, "nan"));
  CHECK(!has(svg, "inf"));
  // Nothing drawable at all: the axes run 0..1.
  c.panels[0].series = {{"none", {{kNaN, 1}}}, {"empty", {}}};
  svg = line_chart_svg(c);
  CHECK(xml_problem(svg) == "");
  CHECK(polyline_sizes(svg).empty());
  CHECK(has(svg, ">0.2</text>"));
  // A lone point is a marker.
  c.panels[0].series = {{"one", {{1, 1}}}};
  svg = line_chart_svg(c);
  CHECK(polyline_sizes(svg).empty());
  CHECK(count(before_legend(svg), "<circle") == 1);
}

TEST_CASE("svg: singular-value spectra on a log axis leave out zeros") {
  LineChart c;
  c.title = "spectra";
  c.panels = {{"layer 0", "i", "singular value", true, {}}};
  for (int head = 0; head < 12; ++head) {
    LineSeries s{"head " + std::to_string(head), {}};
    for (int i = 0; i < 16; ++i) s.points.push_back({double(i), i < 12 ? std::pow(0.5, i) * (head + 1) : 0.0});
    c.panels[0].series.push_back(s);
  }
  std::string svg = line_chart_svg(c);
  CHECK(xml_problem(svg) == "");
  CHECK(has(svg, ">singular value (log)</text>"));
  CHECK(polyline_sizes(svg) == std::vector<size_t>(12, 12));
  CHECK(has(svg, ">12</text>"));  // the x axis spans the points drawn (0..11), not the zeros after them
  CHECK(!has(svg, ">15</text>"));
  CHECK(count(legend_of(svg), ">head ") == 12);
  // Past ten series the colours come round again, dashed.
  const std::string eleventh = R"(stroke="#1f77b4" class="series" stroke-width="1.8" stroke-dasharray="7 3")";
  CHECK(count(before_legend(svg), eleventh) == 1);
  // Only zeros and negatives: nothing a log axis can show, so a linear one.
  c.panels[0].series = {{"zero", {{0, 0}, {1, 0}, {2, -1}}}};
  svg = line_chart_svg(c);
  CHECK(xml_problem(svg) == "");
  CHECK(!has(svg, "(log)"));
  CHECK(polyline_sizes(svg) == std::vector<size_t>{3});
}

TEST_CASE("svg: a line chart escapes its title, labels and names") {
  LineChart c;
  c.title = kOdd;
  c.panels = {{kOdd, kOdd, kOdd, false, {{kOdd, {{0, 0}, {1, 1}}}}}};
  const std::string svg = line_chart_svg(c);
  CHECK(xml_problem(svg) == "");
  CHECK(count(svg, kOddEscaped) == 5);
  CHECK(!has(svg, "<b>"));
  CHECK(error_of([] { line_chart_svg({}); }) == "line chart: no panels");
}

TEST_CASE("svg: keystone plot's figure is well-formed XML as well") {
  ks::testing::TempDir tmp;
  ks::testing::write_text(tmp.path() / "metrics.jsonl",
                          "{\"split\": \"train\", \"step\": 1, \"loss\": 2.0, \"grad_norm\": 3}\n"
                          "{\"split\": \"valid\", \"step\": 1, \"loss\": 2.1, \"accuracy\": 0.5, "
                          "\"exact_match\": 0.1}\n"
                          "{\"split\": \"test\", \"step\": 1, \"loss\": 2.2, \"accuracy\": 0.4}\n");
  PlotOptions o;
  o.title = kOdd;
  CHECK(xml_problem(render_plot_svg({tmp.path()}, o)) == "");
}
