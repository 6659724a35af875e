// tools/plot.cpp — `keystone plot`: the metrics.jsonl files of training runs
// drawn as one self-contained SVG (a loss panel, and panels for accuracy,
// bits per byte and the gradient norm when any run recorded them), with nice
// axis ticks and a legend.
// Not here: writing metrics (tools/trainer.h), raster output, interactivity.
#include "tools/plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "core/error.h"
#include "nn/user_input.h"
#include "tools/cli.h"

namespace ks::tools {

using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

struct Point { double x, y; };
using Series = std::vector<Point>;

enum class Split { Train, Valid, Test };

// One run's curves in plot coordinates (x: step or minutes), by split and
// record key ("loss", "accuracy", "exact_match", "bpb", "grad_norm"). A test
// series holds at most one point: the last test record, measured on the
// whole test split, is the run's final result.
struct Run {
  std::string name;
  std::map<std::pair<Split, std::string>, Series> series;
  const Series& at(Split split, const std::string& key) const {
    static const Series none;
    auto it = series.find({split, key});
    return it == series.end() ? none : it->second;
  }
};

// The largest magnitude drawn: beyond it an axis's range could overflow.
constexpr double kMaxDrawn = 1e300;

// A drawable number, or nullopt when absent, null (how nlohmann writes NaN),
// not a number, infinite or beyond ±kMaxDrawn: such points are skipped
// rather than drawn.
std::optional<double> finite(const json& rec, const char* key) {
  auto it = rec.find(key);
  if (it == rec.end() || !it->is_number()) return std::nullopt;
  double v = it->get<double>();
  return std::abs(v) <= kMaxDrawn ? std::optional<double>(v) : std::nullopt;  // false for NaN too
}

json parse_record(const std::string& line, const std::string& where) {
  json rec = nn::try_parse_json(line, where);
  KS_CHECK(!rec.is_discarded(), where, ": not JSON");
  KS_CHECK(rec.is_object(), where, ": not a JSON object");
  for (const char* key : {"split", "step", "loss"}) KS_CHECK(rec.contains(key), where, ": no \"", key, "\"");
  KS_CHECK(rec["split"].is_string(), where, ": \"split\" is not a string");
  // A null loss is how nlohmann writes NaN: allowed here, skipped when drawn.
  for (const char* key : {"step", "loss"})
    KS_CHECK(rec[key].is_number() || rec[key].is_null(), where, ": \"", key, "\" is not a number");
  return rec;
}

void add_record(Run& run, const json& rec, const std::string& x_axis) {
  std::optional<double> x = finite(rec, x_axis == "time" ? "elapsed_s" : "step");
  if (!x) return;  // e.g. no elapsed_s: the record has no place on a time axis
  if (x_axis == "time") *x /= 60;
  const std::string name = rec["split"];
  if (name != "train" && name != "valid" && name != "test") return;  // other splits: newer writers, not drawn
  const Split split = name == "train" ? Split::Train : name == "valid" ? Split::Valid : Split::Test;
  const std::vector<const char*> keys = split == Split::Train
                                            ? std::vector<const char*>{"loss", "bpb", "grad_norm"}
                                            : std::vector<const char*>{"loss", "accuracy", "exact_match", "bpb"};
  for (const char* key : keys) {
    std::optional<double> y = finite(rec, key);
    if (!y) continue;
    Series& s = run.series[{split, key}];
    if (split == Split::Test) s.clear();
    s.push_back({*x, *y});
  }
}

// config.json's "name" when there is one, else the folder's own name.
std::string run_name(const fs::path& dir) {
  std::ifstream in(dir / "config.json");
  if (in) {
    json config = nn::try_parse_json(std::string(std::istreambuf_iterator<char>(in), {}), "config.json");
    if (config.is_object() && config.contains("name") && config["name"].is_string() &&
        !config["name"].get<std::string>().empty())
      return config["name"];
  }
  fs::path p = fs::absolute(dir).lexically_normal();  // "run/" and "." name their folder too
  if (p.filename().empty()) p = p.parent_path();
  return p.filename().empty() ? p.string() : p.filename().string();
}

Run read_run(const fs::path& dir, const std::string& x_axis) {
  KS_CHECK(fs::is_directory(dir), "plot: run folder ", dir.string(),
           fs::exists(dir) ? " is not a folder" : " does not exist");
  const fs::path file = dir / "metrics.jsonl";
  std::ifstream in(file);
  KS_CHECK(fs::is_regular_file(file) && in, "plot: no metrics.jsonl in ", dir.string());
  Run run;
  run.name = run_name(dir);
  size_t records = 0;
  std::string line;
  for (int64_t n = 1; std::getline(in, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    add_record(run, parse_record(line, str("plot: ", file.string(), ":", n)), x_axis);
    ++records;
  }
  KS_CHECK(records > 0, "plot: no metrics in ", file.string());
  return run;
}

// Two runs both named "base" become "base" and "base (2)".
void make_names_unique(std::vector<Run>& runs) {
  std::map<std::string, int> seen;
  for (Run& r : runs)
    if (int k = ++seen[r.name]; k > 1) r.name += " (" + std::to_string(k) + ")";
}

// ---- axes ----

struct Axis {
  double lo = 0, hi = 1;
  bool log = false;
  std::vector<double> ticks;
  double fraction(double v) const {  // where v lies between lo (0) and hi (1)
    return log ? std::log10(v / lo) / std::log10(hi / lo) : (v - lo) / (hi - lo);
  }
};

// The 1, 2 or 5 × 10^k step that cuts `range` into about six parts.
double nice_step(double range) {
  const double raw = range / 6, magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0})
    if (m * magnitude >= raw) return m * magnitude;
  return 10 * magnitude;
}

Axis linear_axis(double lo, double hi) {
  // One value (relatively: 1e-5 and 2e-5 are two): give it room.
  if (hi - lo <= 1e-9 * std::max(std::abs(lo), std::abs(hi))) {
    const double pad = lo == 0 ? 1 : std::abs(lo) * 0.1;
    lo -= pad, hi += pad;
  }
  const double step = nice_step(hi - lo);
  Axis a{std::floor(lo / step) * step, std::ceil(hi / step) * step, false, {}};
  // Ticks as whole multiples of the step, so 0 prints as "0", not "-2.8e-17".
  for (double k = std::round(a.lo / step); k * step <= a.hi + step * 1e-6; ++k) a.ticks.push_back(k * step);
  return a;
}

// The smallest value a log axis shows (with kMaxDrawn the largest); smaller
// ones, zero and negative values are not drawn there.
constexpr double kLogMin = 1e-300;

// Bounds at the 1, 2 or 5 × 10^k just outside the data, so little space is
// wasted; ticks at whole decades, and with few decades also at the 2s and 5s.
// kLogMin <= lo <= hi <= kMaxDrawn.
Axis log_axis(double lo, double hi) {
  // 1, 2, 5 × 10^k, every third one a decade, with a decade to spare at each
  // end: log10 rounds, so floor(log10(0.09999999999999999)) is -1, and the
  // grid must still hold a value below lo and one above hi.
  std::vector<double> grid;
  for (int k = int(std::floor(std::log10(lo))) - 1; k <= int(std::ceil(std::log10(hi))) + 1; ++k)
    for (double m : {1.0, 2.0, 5.0}) grid.push_back(m * std::pow(10.0, k));
  const auto top = std::lower_bound(grid.begin(), grid.end(), hi);
  Axis a{*std::prev(std::upper_bound(grid.begin(), grid.end(), lo)), *top, true, {}};
  if (a.hi == a.lo) a.hi = *std::next(top);  // one value, on the grid: the axis runs to the next grid value
  const bool few_decades = a.hi / a.lo <= 1000;
  for (size_t i = 0; i < grid.size(); ++i)
    if (grid[i] >= a.lo && grid[i] <= a.hi && (few_decades || i % 3 == 0)) a.ticks.push_back(grid[i]);
  return a;
}

bool on_log_axis(double v) { return v >= kLogMin; }  // every value is <= kMaxDrawn already (finite)

// The [min, max] of one coordinate over all points (with `log_only`, those a
// log axis can show); nullopt when there are none.
std::optional<std::pair<double, double>> extent(const std::vector<const Series*>& all, double Point::*c,
                                                bool log_only = false) {
  std::optional<std::pair<double, double>> e;
  for (const Series* s : all)
    for (const Point& p : *s)
      if (!log_only || on_log_axis(p.*c))
        e = e ? std::pair(std::min(e->first, p.*c), std::max(e->second, p.*c)) : std::pair(p.*c, p.*c);
  return e;
}

// Linear; log when the values span over 20x (loss often falls by orders of
// magnitude, and a log axis keeps the late curve readable); or log, where
// values a log axis cannot show (zero, negative) are left out, and linear
// only when no value is left.
enum class Scale { Linear, LogIfWide, Log };

Axis value_axis(const std::vector<const Series*>& all, double Point::*c, Scale scale) {
  auto e = extent(all, c);
  if (!e) return linear_axis(0, 1);
  if (scale == Scale::Log) {
    if (auto positive = extent(all, c, true)) return log_axis(positive->first, positive->second);
  } else if (scale == Scale::LogIfWide && on_log_axis(e->first) && on_log_axis(e->second) &&
             e->second / e->first > 20) {
    return log_axis(e->first, e->second);
  }
  return linear_axis(e->first, e->second);
}

// ---- drawing ----

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}
std::string px(double v) { return fmt("%.1f", v); }

void line(std::ostream& os, double x1, double y1, double x2, double y2, const std::string& attrs) {
  os << "<line x1=\"" << px(x1) << "\" y1=\"" << px(y1) << "\" x2=\"" << px(x2) << "\" y2=\"" << px(y2) << "\" "
     << attrs << "/>\n";
}
// `s` is XML already (escaped by the caller where it comes from the user).
void text(std::ostream& os, double x, double y, const std::string& s, const std::string& attrs = "") {
  os << "<text x=\"" << px(x) << "\" y=\"" << px(y) << "\" " << attrs << ">" << s << "</text>\n";
}

// Compact tick labels: 2k, 10k, 1.5M for steps; up to 3 significant digits else.
std::string tick_label(double v) {
  if (std::abs(v) >= 1e6) return fmt("%.3gM", v / 1e6);
  if (std::abs(v) >= 1e3) return fmt("%.3gk", v / 1e3);
  return fmt("%.3g", v);
}

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '&') out += "&amp;";
    else if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '"') out += "&quot;";
    else if (static_cast<unsigned char>(c) < 0x20) out += ' ';  // control characters are not XML
    else out += c;
  }
  return out;
}

// Matplotlib's tab10: distinct, colour-blind-friendlier than pure hues.
const char* colour(size_t i) {
  static const char* tab10[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
  return tab10[i % 10];
}

// A run's curves share its colour and differ in style: train thin and solid
// (dense and noisy), valid thick and dashed, exact match dotted, test a diamond.
enum class Style { Train, Valid, Exact, Test };
const char* line_attrs(Style s) {
  if (s == Style::Train) return R"(class="train" stroke-width="1.2" stroke-opacity="0.75")";
  if (s == Style::Valid) return R"(class="valid" stroke-width="2.2" stroke-dasharray="7 4")";
  return R"(class="exact" stroke-width="2" stroke-dasharray="2 3")";
}

void marker(std::ostream& os, Point p, const std::string& c, Style s) {
  if (s == Style::Test) {
    os << "<path class=\"test\" d=\"M" << px(p.x) << ',' << px(p.y - 7) << " l6,7 l-6,7 l-6,-7 z\" fill=\"" << c
       << "\" stroke=\"white\" stroke-width=\"1\"/>\n";
  } else {
    os << "<circle cx=\"" << px(p.x) << "\" cy=\"" << px(p.y) << "\" r=\"" << (s == Style::Valid ? 3 : 2)
       << "\" fill=\"" << c << "\"/>\n";
  }
}

struct Box { double x0, y0, x1, y1; };
struct Panel {
  Box box;
  Axis x, y;
  Point to_px(Point p) const {
    return {box.x0 + x.fraction(p.x) * (box.x1 - box.x0), box.y1 - y.fraction(p.y) * (box.y1 - box.y0)};
  }
};

void draw_series(std::ostream& os, const Panel& panel, const Series& all, const std::string& c, Style style) {
  Series s;  // on a log axis, without the values it cannot show (zero, negative)
  std::copy_if(all.begin(), all.end(), std::back_inserter(s), [&](Point p) { return !panel.y.log || on_log_axis(p.y); });
  if (s.size() >= 2 && style != Style::Test) {
    os << "<polyline fill=\"none\" stroke=\"" << c << "\" " << line_attrs(style) << " points=\"";
    for (const Point& p : s) os << px(panel.to_px(p).x) << ',' << px(panel.to_px(p).y) << ' ';
    os << "\"/>\n";
  }
  // Train curves are dense, so no markers, unless a lone point would vanish.
  if (style != Style::Train || s.size() == 1)
    for (const Point& p : s) marker(os, panel.to_px(p), c, style);
}

void draw_frame(std::ostream& os, const Panel& p, const std::string& title, const std::string& xlabel,
                const std::string& ylabel) {
  const Box& b = p.box;
  for (double t : p.y.ticks) {
    const double y = p.to_px({p.x.lo, t}).y;
    line(os, b.x0, y, b.x1, y, R"(stroke="#e6e6e6")");
    text(os, b.x0 - 6, y + 4, tick_label(t), R"(text-anchor="end")");
  }
  for (double t : p.x.ticks) {
    const double x = p.to_px({t, p.y.lo}).x;
    line(os, x, b.y0, x, b.y1, R"(stroke="#e6e6e6")");
    text(os, x, b.y1 + 18, tick_label(t), R"(text-anchor="middle")");
  }
  os << "<rect x=\"" << b.x0 << "\" y=\"" << b.y0 << "\" width=\"" << b.x1 - b.x0 << "\" height=\"" << b.y1 - b.y0
     << "\" fill=\"none\" stroke=\"#888\"/>\n";
  text(os, b.x0, b.y0 - 8, title, R"(font-size="14" font-weight="bold")");
  text(os, (b.x0 + b.x1) / 2, b.y1 + 40, xlabel, R"(text-anchor="middle")");
  os << "<text transform=\"translate(" << b.x0 - 48 << ',' << (b.y0 + b.y1) / 2
     << ") rotate(-90)\" text-anchor=\"middle\">" << ylabel << "</text>\n";
}

// The legend under the panels: the line styles in grey, then each run's
// colour, flowed into rows of 20 px from y = top. Returns the rows used.
int draw_legend(std::ostream& os, const std::vector<Run>& runs, bool any_exact, double top) {
  struct Entry {
    std::optional<Style> style;  // nullopt: a run's colour swatch
    std::string colour, label;
  };
  std::vector<Entry> entries = {{Style::Train, "#555", "train"}, {Style::Valid, "#555", "valid"},
                                {Style::Test, "#555", "test"}};
  if (any_exact) entries.push_back({Style::Exact, "#555", "exact match"});
  for (size_t i = 0; i < runs.size(); ++i) entries.push_back({std::nullopt, colour(i), runs[i].name});
  os << "<g class=\"legend\">\n";
  double x = 70;
  int row = 0;
  for (const Entry& e : entries) {
    const double width = 34 + 7 * e.label.size();  // ~7 px per character at 12 px
    if (x + width > 980 && x > 70) x = 70, ++row;
    const double y = top + 20 * row;
    if (!e.style) {
      os << "<rect x=\"" << x + 5 << "\" y=\"" << y - 6 << "\" width=\"14\" height=\"12\" fill=\"" << e.colour
         << "\"/>\n";
    } else {
      if (*e.style != Style::Test)
        line(os, x, y, x + 24, y, "stroke=\"" + e.colour + "\" " + line_attrs(*e.style));
      if (*e.style != Style::Train) marker(os, {x + 12, y}, e.colour, *e.style);
    }
    text(os, x + 30, y + 4, xml_escape(e.label));
    x += width;
  }
  os << "</g>\n";
  return row + 1;
}

// A panel's curves: which record key of which split, drawn in which style.
struct Curve {
  Split split;
  const char* key;
  Style style;
};
struct PanelSpec {
  const char* title;
  Scale scale;
  std::vector<Curve> curves;
};

std::string draw_svg(const std::vector<Run>& runs, const PlotOptions& o) {
  // Loss and bits per byte (a rescaled loss) take --log-y; the gradient norm
  // spans decades early in training, so it goes to log when wide, as loss does.
  const Scale loss_scale = o.log_y ? Scale::Log : Scale::LogIfWide;
  const std::vector<PanelSpec> specs = {
      {"loss", loss_scale, {{Split::Train, "loss", Style::Train}, {Split::Valid, "loss", Style::Valid},
                            {Split::Test, "loss", Style::Test}}},
      {"accuracy", Scale::Linear, {{Split::Valid, "accuracy", Style::Valid}, {Split::Valid, "exact_match", Style::Exact},
                                   {Split::Test, "accuracy", Style::Test}, {Split::Test, "exact_match", Style::Test}}},
      {"bits per byte", loss_scale, {{Split::Train, "bpb", Style::Train}, {Split::Valid, "bpb", Style::Valid},
                                     {Split::Test, "bpb", Style::Test}}},
      {"gradient norm", Scale::LogIfWide, {{Split::Train, "grad_norm", Style::Train}}},
  };
  // The loss panel always; the others when some run has a value for them.
  std::vector<std::pair<const PanelSpec*, std::vector<const Series*>>> shown;
  std::vector<const Series*> all;
  bool any_exact = false;
  for (const PanelSpec& spec : specs) {
    std::vector<const Series*> panel;
    for (const Run& r : runs)
      for (const Curve& c : spec.curves) panel.push_back(&r.at(c.split, c.key));
    all.insert(all.end(), panel.begin(), panel.end());
    if (&spec == &specs.front() || extent(panel, &Point::y)) shown.emplace_back(&spec, std::move(panel));
  }
  for (const Run& r : runs) any_exact = any_exact || !r.at(Split::Valid, "exact_match").empty() ||
                                        !r.at(Split::Test, "exact_match").empty();
  // One x axis for every panel, so a step lines up across them. One panel
  // takes the full width; more go two to a row.
  const Axis x = value_axis(all, &Point::x, Scale::Linear);
  const std::string xlabel = o.x_axis == "time" ? "minutes" : "step";
  std::ostringstream body;
  for (size_t k = 0; k < shown.size(); ++k) {
    const auto& [spec, panel] = shown[k];
    const double top = 60 + 340.0 * double(k / 2), left = k % 2 ? 575 : 70;
    const Panel p{{left, top, shown.size() == 1 ? 975.0 : left + 400, top + 270}, x,
                  value_axis(panel, &Point::y, spec->scale)};
    draw_frame(body, p, spec->title, xlabel, p.y.log ? std::string(spec->title) + " (log)" : spec->title);
    for (size_t i = 0; i < runs.size(); ++i)
      for (const Curve& c : spec->curves) draw_series(body, p, runs[i].at(c.split, c.key), colour(i), c.style);
  }
  const double legend_top = 392 + 340.0 * double((shown.size() - 1) / 2);
  const int legend_rows = draw_legend(body, runs, any_exact, legend_top);
  std::string title = o.title;
  for (size_t i = 0; o.title.empty() && i < runs.size(); ++i) title += (i ? ", " : "") + runs[i].name;

  const int height = int(legend_top) + 20 * legend_rows;
  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"1000\" height=\"" << height << "\" viewBox=\"0 0 1000 "
      << height << "\" font-family=\"sans-serif\" font-size=\"12\" fill=\"#222\">\n"
      << "<rect width=\"1000\" height=\"" << height << "\" fill=\"white\"/>\n";
  text(svg, 500, 26, xml_escape(title), R"(text-anchor="middle" font-size="16" font-weight="bold")");
  svg << body.str() << "</svg>\n";
  return svg.str();
}

const char* kUsage =
    "usage: keystone plot RUN_DIR... [--out FILE] [--x step|time] [--title TEXT] [--labels A,B,...] [--log-y]\n"
    "Draws the curves of training runs (each RUN_DIR's metrics.jsonl) into one SVG: loss, and accuracy,\n"
    "bits per byte and gradient norm where the runs recorded them.\n"
    "  --out FILE        where to write (default: RUN_DIR/plot.svg for one run, else ./plot.svg)\n"
    "  --x AXIS          step (default) or time (elapsed minutes)\n"
    "  --title TEXT      the plot's title (default: the run names)\n"
    "  --labels A,B,...  the runs' names in the legend, one per RUN_DIR in order (default: config.json's name)\n"
    "  --log-y           a log scale for loss and bits per byte (default: log only when they span over 20x)\n";

}  // namespace

std::string render_plot_svg(const std::vector<fs::path>& run_dirs, const PlotOptions& options) {
  KS_CHECK(!run_dirs.empty(), "plot: no run folders given");
  KS_CHECK(options.x_axis == "step" || options.x_axis == "time",
           "plot: x axis must be step or time, got '", options.x_axis, "'");
  KS_CHECK(options.labels.empty() || options.labels.size() == run_dirs.size(), "plot: ", options.labels.size(),
           " labels for ", run_dirs.size(), " run folders; give one per run");
  std::vector<Run> runs;
  for (const fs::path& dir : run_dirs) runs.push_back(read_run(dir, options.x_axis));
  for (size_t i = 0; i < options.labels.size(); ++i) runs[i].name = options.labels[i];
  make_names_unique(runs);
  return draw_svg(runs, options);
}

void write_plot_svg(const std::vector<fs::path>& run_dirs, const fs::path& out, const PlotOptions& options) {
  const std::string svg = render_plot_svg(run_dirs, options);  // before touching `out`: errors leave it as it was
  const fs::path tmp = fs::path(out) += ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary);
    f << svg;
    KS_CHECK(f.flush(), "plot: cannot write ", out.string());
  }
  std::error_code ec;
  fs::rename(tmp, out, ec);
  if (ec) fs::remove(tmp, ec);
  KS_CHECK(!ec, "plot: cannot write ", out.string(), " (", ec.message(), ")");
}

int plot(const std::vector<std::string>& args) {
  // Flags takes only flags, so the run folders are picked out first: every
  // flag but the switch --log-y takes the next argument as its value.
  std::vector<std::string> dirs, flag_args;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      std::cout << kUsage;
      return 0;
    }
    if (a.rfind("--", 0) == 0) {
      flag_args.push_back(a);
      if (a != "--log-y" && i + 1 < args.size()) flag_args.push_back(args[++i]);
    } else {
      dirs.push_back(a);
    }
  }
  cli::Flags flags(flag_args, {"out", "x", "title", "labels", "log-y"}, {"log-y"});
  if (dirs.empty()) throw cli::UsageError("give at least one RUN_DIR");
  PlotOptions options;
  options.x_axis = flags.get("x", "step");
  if (options.x_axis != "step" && options.x_axis != "time")
    throw cli::UsageError("--x: expected step or time, got '" + options.x_axis + "'");
  options.title = flags.get("title", "");
  options.log_y = flags.has("log-y");
  if (flags.has("labels")) {
    const std::string list = flags.get("labels", "");
    for (size_t start = 0;;) {  // "a,,b", ",a" and "a," hold an empty label
      const size_t comma = std::min(list.find(',', start), list.size());
      if (comma == start) throw cli::UsageError("--labels: an empty label in '" + list + "'");
      options.labels.push_back(list.substr(start, comma - start));
      if (comma == list.size()) break;
      start = comma + 1;
    }
    if (options.labels.size() != dirs.size())
      throw cli::UsageError(str("--labels: ", options.labels.size(), " labels for ", dirs.size(), " run folders"));
  }
  const fs::path out = flags.get("out", dirs.size() == 1 ? (fs::path(dirs[0]) / "plot.svg").string() : "plot.svg");
  write_plot_svg({dirs.begin(), dirs.end()}, out, options);
  std::cout << "wrote " << out.string() << "\n";
  return 0;
}

}  // namespace ks::tools
