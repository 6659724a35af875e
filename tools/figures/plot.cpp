// tools/figures/plot.cpp — `keystone plot`: the metrics.jsonl files of training runs
// drawn as one self-contained SVG (a loss panel, and panels for accuracy,
// the token error rate of seq2seq decodes, bits per byte and the gradient norm
// when any run recorded them), two to a row, an odd last one across its whole
// row, with nice axis ticks and a legend.
// Not here: writing metrics (tools/train/trainer.h), raster output, interactivity.
#include "tools/figures/plot.h"

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
#include "tools/cli/cli.h"
#include "tools/figures/svg.h"
#include "tools/train/run_dir.h"

namespace ks::tools {

using json = nlohmann::json;
namespace fs = std::filesystem;
using svg::Axis;
using svg::on_log_axis;
using svg::Panel;
using svg::Point;
using svg::px;
using svg::Scale;
using svg::Series;

namespace {

enum class Split { Train, Valid, Test };

// One run's curves in plot coordinates (x: step or minutes), by split and
// record key ("loss", "accuracy", "exact_match", "ter", "bpb", "grad_norm"). A test
// series holds at most one point: the last test record, measured on the
// whole test split, is the run's final result.
struct Run {
  std::string name;
  std::map<std::pair<Split, std::string>, Series> series;
  // With --seeds: per series, the standard deviation over the seeds at each point (y), for the band.
  std::map<std::pair<Split, std::string>, Series> spread;
  const Series& at(Split split, const std::string& key) const {
    static const Series none;
    auto it = series.find({split, key});
    return it == series.end() ? none : it->second;
  }
};

// A drawable number (svg::drawable), or nullopt when absent, null (how
// nlohmann writes NaN), not a number, infinite or too large: such points are
// skipped rather than drawn.
std::optional<double> finite(const json& rec, const char* key) {
  auto it = rec.find(key);
  if (it == rec.end() || !it->is_number()) return std::nullopt;
  double v = it->get<double>();
  return svg::drawable(v) ? std::optional<double>(v) : std::nullopt;
}

json parse_record(std::string_view line, const std::string& where) {
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
                                            : std::vector<const char*>{"loss", "accuracy", "exact_match", "ter", "bpb"};
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
  const fs::path file = dir / "config.json";
  std::error_code ec;
  if (fs::exists(file, ec)) {
    const json config =
        nn::try_parse_json(nn::read_regular_file(file.string(), kMaxConfigBytes, "plot"), file.string());
    if (config.is_object() && config.contains("name") && config["name"].is_string() &&
        !config["name"].get<std::string>().empty())
      return config["name"];
  }
  fs::path p = fs::absolute(dir).lexically_normal();  // "run/" and "." name their folder too
  if (p.filename().empty()) p = p.parent_path();
  return p.filename().empty() ? p.string() : p.filename().string();
}

Run run_from_metrics(const RunMetrics& m, const std::string& x_axis) {
  Run run;
  run.name = m.name;
  size_t records = 0;
  int64_t n = 1;
  for (size_t start = 0; start < m.text.size(); ++n) {
    const size_t end = std::min(m.text.find('\n', start), m.text.size());
    const std::string_view line = std::string_view(m.text).substr(start, end - start);
    start = end + 1;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    add_record(run, parse_record(line, str("plot: ", m.file, ":", n)), x_axis);
    ++records;
  }
  KS_CHECK(records > 0, "plot: no metrics in ", m.file);
  return run;
}

// A run folder's metrics.jsonl (a regular file of bounded size: a FIFO would block) and name.
RunMetrics read_run(const fs::path& dir) {
  KS_CHECK(fs::is_directory(dir), "plot: run folder ", dir.string(),
           fs::exists(dir) ? " is not a folder" : " does not exist");
  const fs::path file = dir / "metrics.jsonl";
  std::error_code ec;
  KS_CHECK(fs::exists(file, ec), "plot: no metrics.jsonl in ", dir.string());
  return {run_name(dir), file.string(), nn::read_regular_file(file.string(), kMaxMetricsBytes, "plot")};
}

// --seeds: runs named NAME-seedN merged into one run NAME per group (in the
// order groups first appear), each series the mean over the seeds at the x
// values every seed has, its spread the sample standard deviation there.
std::vector<Run> group_seeds(const std::vector<Run>& runs) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<const Run*>> groups;
  for (const Run& r : runs) {
    const size_t at = r.name.rfind("-seed");
    const bool seeded = at != std::string::npos && at + 5 < r.name.size() &&
                        r.name.find_first_not_of("0123456789", at + 5) == std::string::npos;
    const std::string key = seeded ? r.name.substr(0, at) : r.name;
    if (!groups.count(key)) order.push_back(key);
    groups[key].push_back(&r);
  }
  std::vector<Run> out;
  for (const std::string& key : order) {
    const std::vector<const Run*>& members = groups[key];
    Run merged;
    merged.name = members.size() > 1 ? str(key, " (", members.size(), " seeds)") : key;
    for (const auto& [id, first] : members.front()->series) {
      Series mean, spread;
      for (const Point& p : first) {
        std::vector<double> ys;
        for (const Run* m : members) {
          const Series& s = m->at(id.first, id.second);
          auto hit = std::find_if(s.begin(), s.end(), [&](const Point& q) { return q.x == p.x; });
          if (hit != s.end()) ys.push_back(hit->y);
        }
        if (ys.size() != members.size()) continue;  // a step not every seed reached
        double mu = 0, var = 0;
        for (double y : ys) mu += y;
        mu /= double(ys.size());
        for (double y : ys) var += (y - mu) * (y - mu);
        mean.push_back({p.x, mu});
        spread.push_back({p.x, ys.size() > 1 ? std::sqrt(var / double(ys.size() - 1)) : 0.0});
      }
      merged.series[id] = std::move(mean);
      if (members.size() > 1) merged.spread[id] = std::move(spread);
    }
    out.push_back(std::move(merged));
  }
  return out;
}

// Two runs both named "base" become "base" and "base (2)".
void make_names_unique(std::vector<Run>& runs) {
  std::map<std::string, int> seen;
  for (Run& r : runs)
    if (int k = ++seen[r.name]; k > 1) r.name += " (" + std::to_string(k) + ")";
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
    svg::circle(os, p.x, p.y, s == Style::Valid ? 3 : 2, c);
  }
}

// A ± std band behind a series (--seeds): mean ± spread at each point, clipped
// to what a log axis can show.
void draw_band(std::ostream& os, const Panel& panel, const Series& mean, const Series& spread, const std::string& c) {
  if (mean.size() < 2 || spread.size() != mean.size()) return;
  Series edge;
  for (size_t i = 0; i < mean.size(); ++i) edge.push_back(panel.to_px({mean[i].x, mean[i].y + spread[i].y}));
  for (size_t i = mean.size(); i-- > 0;) {
    const double lo = mean[i].y - spread[i].y;
    edge.push_back(panel.to_px({mean[i].x, panel.y.log && !on_log_axis(lo) ? panel.y.lo : lo}));
  }
  svg::polygon(os, edge, c, "fill-opacity=\"0.18\"");
}

void draw_series(std::ostream& os, const Panel& panel, const Series& all, const std::string& c, Style style) {
  Series s;  // on a log axis, without the values it cannot show (zero, negative)
  std::copy_if(all.begin(), all.end(), std::back_inserter(s),
               [&](Point p) { return !panel.y.log || on_log_axis(p.y); });
  if (s.size() >= 2 && style != Style::Test) {
    Series pixels;
    for (const Point& p : s) pixels.push_back(panel.to_px(p));
    svg::polyline(os, pixels, c, line_attrs(style));
  }
  // Train curves are dense, so no markers, unless a lone point would vanish.
  if (style != Style::Train || s.size() == 1)
    for (const Point& p : s) marker(os, panel.to_px(p), c, style);
}

// The legend under the panels: the line styles in grey, then each run's colour.
int draw_legend(std::ostream& os, const std::vector<Run>& runs, bool any_exact, double top) {
  auto style_sample = [](Style style) {
    return [style](std::ostream& os, double x, double y) {
      if (style != Style::Test) svg::line(os, x, y, x + 24, y, std::string("stroke=\"#555\" ") + line_attrs(style));
      if (style != Style::Train) marker(os, {x + 12, y}, "#555", style);
    };
  };
  std::vector<svg::LegendEntry> entries = {{style_sample(Style::Train), "train"},
                                           {style_sample(Style::Valid), "valid"},
                                           {style_sample(Style::Test), "test"}};
  if (any_exact) entries.push_back({style_sample(Style::Exact), "exact match"});
  for (size_t i = 0; i < runs.size(); ++i) {
    auto swatch = [c = std::string(svg::colour(i))](std::ostream& os, double x, double y) {
      svg::rect(os, x + 5, y - 6, 14, 12, "fill=\"" + c + "\"");
    };
    entries.push_back({swatch, runs[i].name});
  }
  return svg::legend(os, entries, top);
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
      {"loss",
       loss_scale,
       {{Split::Train, "loss", Style::Train},
        {Split::Valid, "loss", Style::Valid},
        {Split::Test, "loss", Style::Test}}},
      {"accuracy",
       Scale::Linear,
       {{Split::Valid, "accuracy", Style::Valid},
        {Split::Valid, "exact_match", Style::Exact},
        {Split::Test, "accuracy", Style::Test},
        {Split::Test, "exact_match", Style::Test}}},
      {"token error rate", Scale::Linear, {{Split::Valid, "ter", Style::Valid}, {Split::Test, "ter", Style::Test}}},
      {"bits per byte",
       loss_scale,
       {{Split::Train, "bpb", Style::Train}, {Split::Valid, "bpb", Style::Valid}, {Split::Test, "bpb", Style::Test}}},
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
    if (&spec == &specs.front() || svg::extent(panel, &Point::y)) shown.emplace_back(&spec, std::move(panel));
  }
  for (const Run& r : runs)
    any_exact = any_exact || !r.at(Split::Valid, "exact_match").empty() || !r.at(Split::Test, "exact_match").empty();
  // One x axis for every panel, so a step lines up across them. One panel
  // takes the full width; more go two to a row, and an odd last one takes
  // its whole row (no empty slot beside it).
  const Axis x = value_axis(all, &Point::x, Scale::Linear);
  const std::string xlabel = o.x_axis == "time" ? "minutes" : "step";
  const size_t columns = shown.size() == 1 ? 1 : 2;
  std::ostringstream body;
  for (size_t k = 0; k < shown.size(); ++k) {
    const auto& [spec, panel] = shown[k];
    svg::Box box = svg::panel_box(k, columns);
    if (columns == 2 && k % 2 == 0 && k + 1 == shown.size()) box.x1 = svg::panel_box(k + 1, columns).x1;
    const Panel p{box, x, value_axis(panel, &Point::y, spec->scale)};
    svg::frame(body, p, spec->title, xlabel, p.y.log ? std::string(spec->title) + " (log)" : spec->title);
    for (size_t i = 0; i < runs.size(); ++i)
      for (const Curve& c : spec->curves) {
        auto band = runs[i].spread.find({c.split, c.key});
        if (band != runs[i].spread.end() && c.style != Style::Train)
          draw_band(body, p, runs[i].at(c.split, c.key), band->second, svg::colour(i));
        draw_series(body, p, runs[i].at(c.split, c.key), svg::colour(i), c.style);
      }
  }
  const double legend_top = svg::legend_top(shown.size(), columns);
  const int legend_rows = draw_legend(body, runs, any_exact, legend_top);
  std::string title = o.title;
  for (size_t i = 0; o.title.empty() && i < runs.size(); ++i) title += (i ? ", " : "") + runs[i].name;
  return svg::document(1000, int(legend_top) + 20 * legend_rows, svg::xml_escape(title), body.str());
}

const char* kUsage =
    "usage: keystone plot RUN_DIR... [--out FILE] [--x step|time] [--title TEXT] [--labels A,B,...] [--log-y]\n"
    "                     [--seeds]\n"
    "Draws the curves of training runs (each RUN_DIR's metrics.jsonl) into one SVG: loss, and accuracy,\n"
    "token error rate (seq2seq), bits per byte and gradient norm where the runs recorded them.\n"
    "  --out FILE        where to write (default: RUN_DIR/plot.svg for one run, else ./plot.svg)\n"
    "  --x AXIS          step (default) or time (elapsed minutes)\n"
    "  --title TEXT      the plot's title (default: the run names)\n"
    "  --labels A,B,...  the runs' names in the legend, one per RUN_DIR in order (default: config.json's name)\n"
    "  --log-y           a log scale for loss and bits per byte (default: log only when they span over 20x)\n"
    "  --seeds           runs named NAME-seedN drawn as one curve per NAME: the mean over the seeds,\n"
    "                    in a band of +- one standard deviation (valid and test curves)\n";

}  // namespace

std::string render_plot_svg(const std::vector<fs::path>& run_dirs, const PlotOptions& options) {
  KS_CHECK(!run_dirs.empty(), "plot: no run folders given");
  KS_CHECK(options.labels.empty() || options.labels.size() == run_dirs.size(), "plot: ", options.labels.size(),
           " labels for ", run_dirs.size(), " run folders; give one per run");
  std::vector<RunMetrics> metrics;
  for (const fs::path& dir : run_dirs) metrics.push_back(read_run(dir));
  return render_plot_svg_from_metrics(metrics, options);
}

std::string render_plot_svg_from_metrics(const std::vector<RunMetrics>& metrics, const PlotOptions& options) {
  KS_CHECK(!metrics.empty(), "plot: no run folders given");
  KS_CHECK(options.x_axis == "step" || options.x_axis == "time", "plot: x axis must be step or time, got '",
           options.x_axis, "'");
  KS_CHECK(options.labels.empty() || options.labels.size() == metrics.size(), "plot: ", options.labels.size(),
           " labels for ", metrics.size(), " run folders; give one per run");
  std::vector<Run> runs;
  for (const RunMetrics& m : metrics) runs.push_back(run_from_metrics(m, options.x_axis));
  for (size_t i = 0; i < options.labels.size(); ++i) runs[i].name = options.labels[i];
  if (options.group_seeds) runs = group_seeds(runs);
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
      if (a != "--log-y" && a != "--seeds" && i + 1 < args.size()) flag_args.push_back(args[++i]);
    } else {
      dirs.push_back(a);
    }
  }
  cli::Flags flags(flag_args, {"out", "x", "title", "labels", "log-y", "seeds"}, {"log-y", "seeds"});
  if (dirs.empty()) throw cli::UsageError("give at least one RUN_DIR");
  PlotOptions options;
  options.x_axis = flags.get("x", "step");
  if (options.x_axis != "step" && options.x_axis != "time")
    throw cli::UsageError("--x: expected step or time, got '" + options.x_axis + "'");
  options.title = flags.get("title", "");
  options.log_y = flags.has("log-y");
  options.group_seeds = flags.has("seeds");
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
