// tools/analyze/analysis_report.cpp — analysis.json to figures, and --compare
// (tools/analyze/analysis_report.h).
#include "tools/analyze/analysis_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>

#include "core/error.h"
#include "nn/safetensors.h"
#include "tools/analyze/analysis_summary.h"
#include "tools/cli/cli.h"
#include "tools/figures/analysis_figures.h"

namespace ks::tools {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
const HeatmapCell kBlank{1, 1, {kNaN}};  // a grid position without a matrix (a site with fewer heads)

void write(const fs::path& path, const std::string& text) { nn::write_file_atomically(path.string(), text); }

// One example's maps: rows = sites, columns = heads.
std::string map_figure(const std::vector<const AttentionMap*>& maps, int64_t example) {
  HeatmapGrid g;
  g.title = "attention weights, example " + std::to_string(example) + " (rows: sites, columns: heads)";
  g.rows = int64_t(maps.size());
  for (const AttentionMap* m : maps) g.cols = std::max(g.cols, m->heads);
  for (int64_t h = 0; h < g.cols; ++h) g.col_labels.push_back("head " + std::to_string(h));
  bool tokens = true, shared = true;
  for (const AttentionMap* m : maps) {
    g.row_labels.push_back(m->site);
    tokens = tokens && !m->row_tokens.empty() && !m->col_tokens.empty();
    shared = shared && m->row_tokens == maps[0]->row_tokens && m->col_tokens == maps[0]->col_tokens &&
             m->row_tokens == m->col_tokens && m->heads == g.cols;
  }
  for (const AttentionMap* m : maps)
    for (int64_t h = 0; h < g.cols; ++h) {
      if (h >= m->heads) {
        g.cells.push_back(kBlank);
        if (tokens && !shared) g.x_tokens.push_back({""}), g.y_tokens.push_back({""});
        continue;
      }
      HeatmapCell c{m->rows, m->cols, {}};
      const size_t n = size_t(m->rows * m->cols);
      c.values.assign(m->weights.begin() + h * n, m->weights.begin() + (h + 1) * n);
      g.cells.push_back(std::move(c));
      if (tokens && !shared) g.x_tokens.push_back(m->col_tokens), g.y_tokens.push_back(m->row_tokens);
    }
  if (tokens && shared) {
    g.x_tokens = {maps[0]->col_tokens};
    g.y_tokens = {maps[0]->row_tokens};
  }
  return heatmap_grid_svg(g);
}

// Every site's head × head matrix of `key` ("js" or "cosine"), sites side by side.
std::string matrix_figure(const json& sites, const std::string& key, const std::string& title, double lo, double hi) {
  HeatmapGrid g;
  g.title = title;
  g.rows = 1;
  g.cols = int64_t(sites.size());
  g.lo = lo;
  g.hi = hi;
  g.print_values = true;  // drawn only in cells of at most 16 × 16
  for (const json& site : sites) {
    const json& m = site[key];
    const int64_t h = int64_t(m.size());
    HeatmapCell c{h, h, {}};
    for (const json& row : m)
      for (const json& v : row) c.values.push_back(v.get<double>());
    g.cells.push_back(std::move(c));
    g.col_labels.push_back(site["name"].get<std::string>());
  }
  return heatmap_grid_svg(g);
}

std::string pruning_figure(const json& a) {
  const json& pr = a["pruning"];
  const std::string metric = pr["metric"];
  LineSeries loss{"loss", {}}, value{metric, {}};
  for (const json& p : pr["points"]) {
    const double x = p["masked"].get<double>();
    loss.points.push_back({x, p["loss"].get<double>()});
    value.points.push_back({x, p[metric].is_number() ? p[metric].get<double>() : kNaN});
  }
  LineChart c;
  c.title = "pruning heads in increasing importance (" + a["split"].get<std::string>() + " split)";
  c.panels.push_back({"loss", "heads masked", "loss (nats per prediction)", false, {loss}});
  c.panels.push_back({metric, "heads masked", metric, false, {value}});
  return line_chart_svg(c);
}

// σ_i / σ_1 of each head, first example: one panel per site for the score
// matrix (MGK: the mixture logits) and one for the attention matrix.
std::string spectra_figure(const json& sites) {
  LineChart c;
  c.title = "singular values of each head's matrices, first example (sigma_i / sigma_1)";
  c.columns = 2;
  for (const json& s : sites) {
    const json& examples = s["rank"]["examples"];
    if (examples.empty()) continue;
    const json& ex = examples[0];
    for (const std::string kind : {"scores", "attention"}) {
      LinePanel p{s["name"].get<std::string>() + ": " + (kind == "scores" ? "scores" : "attention"),
                  "index i",
                  "sigma_i / sigma_1",
                  true,
                  {}};
      int64_t head = 0;
      for (const json& hj : ex["heads"]) {
        if (const json* spec = head_spectrum(hj, kind)) {
          LineSeries series{"head " + std::to_string(head), {}};
          const json& sv = (*spec)["singular_values"];
          const double top = sv.empty() ? 0 : sv[0].get<double>();
          for (size_t i = 0; i < sv.size(); ++i)
            series.points.push_back({double(i + 1), top > 0 ? sv[i].get<double>() / top : kNaN});
          p.series.push_back(std::move(series));
        }
        ++head;
      }
      c.panels.push_back(std::move(p));
    }
  }
  if (c.panels.empty()) c.panels.push_back({"no spectra (--examples 0)", "index i", "sigma_i / sigma_1", false, {}});
  return line_chart_svg(c);
}

// ---- --compare ----

// The mean of f over the sites (0 for none).
double site_mean(const AnalysisSummary& a, double (*f)(const AnalysisSummary::Site&)) {
  double sum = 0;
  for (const AnalysisSummary::Site& site : a.sites) sum += f(site);
  return a.sites.empty() ? 0 : sum / double(a.sites.size());
}

// Heads masked along the pruning curve before the loss first rises above (1 + rise) × the unmasked loss.
int64_t maskable_heads(const std::vector<AnalysisSummary::Point>& points, double rise) {
  int64_t n = 0;
  for (const AnalysisSummary::Point& p : points) {
    if (p.loss > points[0].loss * (1 + rise)) break;
    n = p.masked;
  }
  return n;
}

}  // namespace

const json* head_spectrum(const json& head, const std::string& kind) {
  if (head.contains(kind)) return &head[kind];
  return kind == "scores" && head.contains("mixture") ? &head["mixture"] : nullptr;
}

double mean_effective_rank(const json& site, const std::string& kind) {
  double s = 0;
  int64_t n = 0;
  for (const json& ex : site["rank"]["examples"])
    for (const json& h : ex["heads"])
      if (const json* spec = head_spectrum(h, kind)) s += (*spec)["effective_rank"].get<double>(), ++n;
  return n > 0 ? s / double(n) : kNaN;
}

int64_t heads_maskable(const json& a, double rise) {
  const json& pts = a["pruning"]["points"];
  if (pts.empty()) return 0;
  const double base = pts[0]["loss"].get<double>();
  int64_t n = 0;
  for (const json& p : pts) {
    if (p["loss"].get<double>() > base * (1 + rise)) break;
    n = p["masked"].get<int64_t>();
  }
  return n;
}

json write_analysis_figures(const json& a, const std::vector<AttentionMap>& maps, const fs::path& out) {
  json files = {{"maps", json::array()}};
  std::map<int64_t, std::vector<const AttentionMap*>> by_example;
  std::vector<int64_t> order;
  for (const AttentionMap& m : maps) {
    if (!by_example.count(m.example)) order.push_back(m.example);
    by_example[m.example].push_back(&m);
  }
  for (int64_t e : order) {
    const std::string name = "maps_example" + std::to_string(e) + ".svg";
    write(out / name, map_figure(by_example[e], e));
    files["maps"].push_back(name);
  }
  write(out / "redundancy_js.svg",
        matrix_figure(a["sites"], "js", "mean Jensen-Shannon divergence between heads' attention (nats, 0 .. ln 2)", 0,
                      std::log(2.0)));
  write(out / "redundancy_cosine.svg",
        matrix_figure(a["sites"], "cosine", "mean cosine similarity of heads' outputs", -1, 1));
  files["redundancy"] = {"redundancy_js.svg", "redundancy_cosine.svg"};
  write(out / "pruning.svg", pruning_figure(a));
  files["pruning"] = "pruning.svg";
  write(out / "spectra.svg", spectra_figure(a["sites"]));
  files["spectra"] = "spectra.svg";
  return files;
}

int compare_analyses(const std::vector<std::string>& args) {
  std::vector<std::string> given, labels;
  fs::path out = ".";
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& x = args[i];
    if (x == "--labels" || x == "--out") {
      if (i + 1 >= args.size()) throw cli::UsageError(x + " needs a value");
      const std::string v = args[++i];
      if (x == "--out") {
        out = v;
        continue;
      }
      for (size_t start = 0;;) {
        const size_t comma = std::min(v.find(',', start), v.size());
        if (comma == start) throw cli::UsageError("--labels: an empty label in '" + v + "'");
        labels.push_back(v.substr(start, comma - start));
        if (comma == v.size()) break;
        start = comma + 1;
      }
    } else if (x.rfind("--", 0) == 0) {
      throw cli::UsageError("--compare: unknown flag " + x + " (expected --labels or --out)");
    } else {
      given.push_back(x);
    }
  }
  if (given.size() < 2) throw cli::UsageError("--compare needs at least two runs or analyses");
  if (!labels.empty() && labels.size() != given.size())
    throw cli::UsageError(str("--labels: ", labels.size(), " labels for ", given.size(), " analyses"));
  const bool labelled = !labels.empty();
  std::vector<AnalysisSummary> runs;
  for (const std::string& g : given) {
    const AnalysisSummary& a = runs.emplace_back(read_analysis_summary(g));
    if (!labelled)
      labels.push_back(str(a.attention, " ", a.heads, "x", a.head_dim, " (", fs::path(a.run).filename().string(), ")"));
  }

  // One summary row per analysis: printed as a table and written as compare.json
  // (what tools/experiments/report.py averages over seeds).
  json rows = json::array();
  std::printf("%-36s %9s %7s %9s %8s %8s %8s %8s %9s\n", "run", "params", "loss", "metric", "JS", "cosine", "erank sc",
              "erank at", "maskable");
  for (size_t i = 0; i < runs.size(); ++i) {
    const AnalysisSummary& r = runs[i];
    const double loss = r.points.empty() ? kNaN : r.points[0].loss;
    const double metric_value = r.points.empty() ? kNaN : r.points[0].metric;
    const double js = site_mean(r, [](const AnalysisSummary::Site& s) { return s.js; });
    const double cosine = site_mean(r, [](const AnalysisSummary::Site& s) { return s.cosine; });
    const double erank_scores = site_mean(r, [](const AnalysisSummary::Site& s) { return s.erank_scores; });
    const double erank_attention = site_mean(r, [](const AnalysisSummary::Site& s) { return s.erank_attention; });
    const int64_t maskable = maskable_heads(r.points, 0.01);
    rows.push_back({{"label", labels[i]},
                    {"run", r.run},
                    {"params", r.params},
                    {"loss", loss},
                    {"metric", r.metric},
                    {"metric_value", metric_value},
                    {"js", js},
                    {"cosine", cosine},
                    {"erank_scores", erank_scores},
                    {"erank_attention", erank_attention},
                    {"maskable", maskable},
                    {"total_heads", r.total_heads}});
    std::printf("%-36s %9lld %7.4f %9.4g %8.4f %8.4f %8.2f %8.2f %4lld/%-4lld\n", labels[i].c_str(),
                (long long)r.params, loss, metric_value, js, cosine, erank_scores, erank_attention, (long long)maskable,
                (long long)r.total_heads);
  }
  std::printf(
      "(metric: the first run's %s; JS, cosine: mean over sites of the mean off-diagonal entry; erank: mean "
      "effective rank of score / attention matrices; maskable: heads masked before the loss rises over 1%%)\n",
      runs[0].metric.c_str());

  LineChart pruning;
  pruning.title = "pruning curves, heads masked in increasing importance";
  LinePanel loss{"loss", "fraction of heads masked", "loss (nats per prediction)", false, {}};
  LinePanel rel{"loss / unmasked loss", "fraction of heads masked", "relative loss", false, {}};
  LineChart per_site;
  per_site.title = "per attention site";
  per_site.columns = 2;
  LinePanel js{"head redundancy: mean JS divergence", "site", "nats", false, {}};
  LinePanel cosine{"head redundancy: mean cosine of outputs", "site", "cosine", false, {}};
  LinePanel er_s{"effective rank of score matrices", "site", "effective rank", false, {}};
  LinePanel er_a{"effective rank of attention matrices", "site", "effective rank", false, {}};
  for (size_t i = 0; i < runs.size(); ++i) {
    const AnalysisSummary& r = runs[i];
    const double total = double(std::max<int64_t>(1, r.total_heads));
    LineSeries l{labels[i], {}}, q{labels[i], {}};
    const double base = r.points.empty() ? 1 : r.points[0].loss;
    for (const AnalysisSummary::Point& p : r.points) {
      l.points.push_back({double(p.masked) / total, p.loss});
      q.points.push_back({double(p.masked) / total, p.loss / base});
    }
    loss.series.push_back(std::move(l));
    rel.series.push_back(std::move(q));
    LineSeries a{labels[i], {}}, b{labels[i], {}}, c{labels[i], {}}, d{labels[i], {}};
    double x = 0;
    for (const AnalysisSummary::Site& s : r.sites) {
      a.points.push_back({x, s.js});
      b.points.push_back({x, s.cosine});
      c.points.push_back({x, s.erank_scores});
      d.points.push_back({x, s.erank_attention});
      x += 1;
    }
    js.series.push_back(std::move(a));
    cosine.series.push_back(std::move(b));
    er_s.series.push_back(std::move(c));
    er_a.series.push_back(std::move(d));
  }
  pruning.panels = {loss, rel};
  per_site.panels = {js, cosine, er_s, er_a};
  fs::create_directories(out);
  write(out / "compare_pruning.svg", line_chart_svg(pruning));
  write(out / "compare_sites.svg", line_chart_svg(per_site));
  // NaN (an unmeasured rank) is not JSON: it is written as null.
  write(out / "compare.json", json{{"schema", "keystone.compare/1"}, {"runs", rows}}.dump(2) + "\n");
  std::printf("wrote %s, %s and %s\n", (out / "compare_pruning.svg").string().c_str(),
              (out / "compare_sites.svg").string().c_str(), (out / "compare.json").string().c_str());
  return 0;
}

}  // namespace ks::tools
