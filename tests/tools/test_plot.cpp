// tests/tools/test_plot.cpp — `keystone plot`: run folders with metrics.jsonl
// to SVG (curves per run and split, panels, log axes on awkward data — values
// just below a power of ten, single points, zero, negative — escaping, names,
// labels), the errors naming folder, file and line, and the command's flags
// and output file.
// Not here: how the SVG looks (checked by eye), the trainer writing metrics.
#include <doctest/doctest.h>

#include <fstream>
#include <iostream>
#include <sstream>

#include "core/error.h"
#include "datasets/data_testing.h"
#include "tools/cli/cli.h"
#include "tools/figures/plot.h"

using namespace ks::tools;
using ks::str;
namespace fs = std::filesystem;
using ks::testing::error_of;
using ks::testing::read_text;
using ks::testing::TempDir;
using ks::testing::write_text;

namespace {

// A run folder `root/folder` with the given metrics.jsonl and, when not empty, config.json.
fs::path make_run(const fs::path& root, const std::string& folder, const std::string& metrics,
                  const std::string& config = "") {
  fs::path dir = root / folder;
  fs::create_directories(dir);
  write_text(dir / "metrics.jsonl", metrics);
  if (!config.empty()) write_text(dir / "config.json", config);
  return dir;
}

const std::string kMetrics = R"({"split": "train", "step": 100, "epoch": 0, "loss": 3.2, "lr": 3e-4, "elapsed_s": 60})"
                             "\n"
                             R"({"split": "train", "step": 200, "epoch": 0, "loss": 2.9, "lr": 3e-4, "elapsed_s": 120})"
                             "\n"
                             R"({"split": "valid", "step": 200, "loss": 3.0, "accuracy": 0.3, "elapsed_s": 130})"
                             "\n"
                             R"({"split": "train", "step": 300, "epoch": 1, "loss": 2.7, "lr": 3e-4, "elapsed_s": 180})"
                             "\n"
                             R"({"split": "valid", "step": 400, "loss": 2.8, "accuracy": 0.35, "elapsed_s": 250})"
                             "\n"
                             R"({"split": "test", "step": 400, "loss": 2.85, "accuracy": 0.34, "elapsed_s": 260})"
                             "\n";

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + what.size())) ++n;
  return n;
}

// The SVG before the legend, whose line-style samples would be counted too.
std::string curves(const std::string& svg) { return svg.substr(0, svg.find("<g class=\"legend\"")); }

// Every data point drawn before the legend (polyline vertices, circles, and
// the test diamonds' centres) as (x, y) pixels.
std::vector<std::pair<double, double>> drawn_points(const std::string& svg) {
  const std::string c = curves(svg);
  std::vector<std::pair<double, double>> out;
  auto after = [&](size_t at, const std::string& key) { return std::stod(c.substr(c.find(key, at) + key.size())); };
  for (size_t at = c.find("points=\""); at != std::string::npos; at = c.find("points=\"", at + 1)) {
    std::istringstream list(c.substr(at + 8, c.find('"', at + 8) - at - 8));
    double x, y;
    char comma;
    while (list >> x >> comma >> y) out.emplace_back(x, y);
  }
  for (size_t at = c.find("<circle"); at != std::string::npos; at = c.find("<circle", at + 1))
    out.emplace_back(after(at, "cx=\""), after(at, "cy=\""));
  for (size_t at = c.find("<path class=\"test\" d=\"M"); at != std::string::npos;
       at = c.find("<path class=\"test\"", at + 1)) {
    const size_t m = c.find('M', at) + 1;
    out.emplace_back(std::stod(c.substr(m)), after(m, ",") + 7);
  }
  return out;
}

// True when the SVG has no NaN or infinity and every point lies in the box
// x0..x1, y0..y1 (by default the single loss panel's).
bool drawn_inside(const std::string& svg, double x0 = 70, double y0 = 60, double x1 = 975, double y1 = 330) {
  if (svg.find("nan") != std::string::npos || svg.find("inf") != std::string::npos) return false;
  for (auto [x, y] : drawn_points(svg))
    if (!(x >= x0 - 0.05 && x <= x1 + 0.05 && y >= y0 - 0.05 && y <= y1 + 0.05)) return false;
  return true;
}

// A train record per loss, at steps 1, 2, ...
std::string train_losses(const std::vector<std::string>& losses) {
  std::string out;
  for (size_t i = 0; i < losses.size(); ++i)
    out += "{\"split\": \"train\", \"step\": " + std::to_string(i + 1) + ", \"loss\": " + losses[i] + "}\n";
  return out;
}

// std::cout into a string while in scope, restored even when the command throws.
struct CoutCapture {
  std::ostringstream text;
  std::streambuf* old = std::cout.rdbuf(text.rdbuf());
  ~CoutCapture() { std::cout.rdbuf(old); }
};

}  // namespace

TEST_CASE("plot: two runs give each split its own curves in both panels") {
  TempDir tmp;
  fs::path a = make_run(tmp.path(), "a", kMetrics), b = make_run(tmp.path(), "b", kMetrics);
  std::string svg = render_plot_svg({a, b});
  CHECK(svg.rfind("<svg", 0) == 0);
  CHECK(svg.find("viewBox=\"0 0 1000 ") != std::string::npos);
  CHECK(svg.find(">a</text>") != std::string::npos);
  CHECK(svg.find(">b</text>") != std::string::npos);
  CHECK(svg.find(">accuracy</text>") != std::string::npos);
  CHECK(svg.find(">step</text>") != std::string::npos);
  CHECK(svg.find("loss (log)") == std::string::npos);
  std::string c = curves(svg);
  CHECK(count(c, "<polyline") == 6);  // per run: train loss, valid loss, valid accuracy
  CHECK(count(c, "class=\"train\"") == 2);
  CHECK(count(c, "class=\"valid\"") == 4);
  CHECK(count(c, "<path class=\"test\"") == 4);  // per run: test loss and test accuracy
  CHECK(count(c, "<circle") == 8);               // valid markers: 2 points × 2 panels × 2 runs
  CHECK(count(c, "#1f77b4") > 0);                // the first two palette colours
  CHECK(count(c, "#ff7f0e") > 0);
  CHECK(svg.find("exact match") == std::string::npos);
}

TEST_CASE("plot: without accuracy only the loss panel is drawn, full width") {
  TempDir tmp;
  fs::path a = make_run(tmp.path(), "a", train_losses({"2.0", "1.5"}));
  std::string svg = render_plot_svg({a});
  CHECK(svg.find(">accuracy</text>") == std::string::npos);
  CHECK(svg.find(">loss</text>") != std::string::npos);
  CHECK(svg.find("width=\"905\"") != std::string::npos);
  CHECK(count(curves(svg), "<polyline") == 1);
}

TEST_CASE("plot: exact match gets a dotted curve and a legend entry") {
  TempDir tmp;
  fs::path a = make_run(tmp.path(), "a",
                        R"({"split": "valid", "step": 10, "loss": 2.0, "accuracy": 0.5, "exact_match": 0.1})"
                        "\n"
                        R"({"split": "valid", "step": 20, "loss": 1.5, "accuracy": 0.7, "exact_match": 0.3})"
                        "\n");
  std::string svg = render_plot_svg({a});
  CHECK(count(curves(svg), "class=\"exact\"") == 1);
  CHECK(svg.find("stroke-dasharray=\"2 3\"") != std::string::npos);
  CHECK(svg.find(">exact match</text>") != std::string::npos);
}

TEST_CASE("plot: run names come from config.json or the folder, escaped and made unique") {
  TempDir tmp;
  fs::path odd = make_run(tmp.path(), "odd", kMetrics, R"({"name": "a<b & \"c\""})");
  fs::path s1 = make_run(tmp.path(), "s1", kMetrics, R"({"name": "same"})");
  fs::path s2 = make_run(tmp.path(), "s2", kMetrics, R"({"name": "same"})");
  fs::path plain = make_run(tmp.path(), "plainrun", kMetrics, "not json");
  std::string svg = render_plot_svg({odd, s1, s2, fs::path(plain.string() + "/")});
  CHECK(svg.find(">a&lt;b &amp; &quot;c&quot;</text>") != std::string::npos);
  CHECK(svg.find("a<b") == std::string::npos);
  CHECK(svg.find(">same</text>") != std::string::npos);
  CHECK(svg.find(">same (2)</text>") != std::string::npos);
  CHECK(svg.find(">plainrun</text>") != std::string::npos);
  // The default title lists the runs; a given one is used (escaped) instead.
  CHECK(svg.find("a&lt;b &amp; &quot;c&quot;, same, same (2), plainrun</text>") != std::string::npos);
  PlotOptions titled_options;
  titled_options.title = "x < y";
  std::string titled = render_plot_svg({s1}, titled_options);
  CHECK(titled.find(">x &lt; y</text>") != std::string::npos);
}

TEST_CASE("plot: a loss range over 20x gets a log axis, a narrow one stays linear") {
  TempDir tmp;
  fs::path wide = make_run(tmp.path(), "wide", train_losses({"100", "0.5"}));
  std::string svg = render_plot_svg({wide});
  CHECK(svg.find(">loss (log)</text>") != std::string::npos);
  // Bounds at the 1-2-5 values around the data; with few decades ticks at 1, 2 and 5.
  for (const char* tick : {">0.5</text>", ">1</text>", ">2</text>", ">20</text>", ">100</text>"})
    CHECK_MESSAGE(svg.find(tick) != std::string::npos, std::string(tick));
  CHECK(svg.find(">0.2</text>") == std::string::npos);
  fs::path many = make_run(tmp.path(), "many", train_losses({"8", "0.0003"}));
  std::string decades = render_plot_svg({many});  // five decades: whole decades only
  CHECK(decades.find(">0.001</text>") != std::string::npos);
  CHECK(decades.find(">10</text>") != std::string::npos);
  CHECK(decades.find(">0.002</text>") == std::string::npos);
  fs::path narrow = make_run(tmp.path(), "narrow", train_losses({"10", "1"}));
  CHECK(render_plot_svg({narrow}).find("(log)") == std::string::npos);
}

TEST_CASE("plot: steps get compact nice tick labels") {
  TempDir tmp;
  fs::path a = make_run(tmp.path(), "a",
                        "{\"split\": \"train\", \"step\": 0, \"loss\": 2.0}\n"
                        "{\"split\": \"train\", \"step\": 9500, \"loss\": 1.0}\n");
  std::string svg = render_plot_svg({a});
  for (const char* tick : {">0</text>", ">2k</text>", ">4k</text>", ">10k</text>", ">1.2</text>", ">1.8</text>"})
    CHECK_MESSAGE(svg.find(tick) != std::string::npos, std::string(tick));
  CHECK(svg.find(">2000</text>") == std::string::npos);
}

TEST_CASE("plot: non-finite losses are skipped and a lone point is still drawn") {
  TempDir tmp;
  // nlohmann writes NaN and infinities as null.
  fs::path a = make_run(tmp.path(), "a",
                        "{\"split\": \"train\", \"step\": 1, \"loss\": 2.0}\n"
                        "\n"
                        "{\"split\": \"train\", \"step\": 2, \"loss\": null}\n"
                        "{\"split\": \"train\", \"step\": 3, \"loss\": 1.0}\n");
  std::string c = curves(render_plot_svg({a}));
  REQUIRE(count(c, "<polyline") == 1);
  size_t at = c.find("points=\"", c.find("<polyline"));
  std::string points = c.substr(at + 8, c.find('"', at + 8) - at - 8);
  CHECK(count(points, ",") == 2);
  CHECK(points.find("nan") == std::string::npos);

  fs::path lone = make_run(tmp.path(), "lone", "{\"split\": \"train\", \"step\": 5, \"loss\": 1.0}\n");
  std::string one = curves(render_plot_svg({lone}));
  CHECK(count(one, "<polyline") == 0);
  CHECK(count(one, "<circle") == 1);
}

TEST_CASE("plot: --x time puts elapsed minutes on the x axis") {
  TempDir tmp;
  fs::path a = make_run(tmp.path(), "a",
                        "{\"split\": \"train\", \"step\": 1, \"loss\": 2.0, \"elapsed_s\": 60}\n"
                        "{\"split\": \"train\", \"step\": 2, \"loss\": 1.0, \"elapsed_s\": 540}\n");
  PlotOptions time;
  time.x_axis = "time";
  std::string svg = render_plot_svg({a}, time);
  CHECK(svg.find(">minutes</text>") != std::string::npos);
  CHECK(svg.find(">10</text>") != std::string::npos);  // 1..9 minutes: ticks 0, 2, .. 10
  CHECK(svg.find(">step</text>") == std::string::npos);
}

TEST_CASE("plot: errors name the folder, file and line") {
  TempDir tmp;
  fs::path missing = tmp.path() / "nope";
  CHECK(error_of([&] { render_plot_svg({missing}); }) == "plot: run folder " + missing.string() + " does not exist");

  write_text(tmp.path() / "file", "");
  CHECK(error_of([&] { render_plot_svg({tmp.path() / "file"}); }) ==
        "plot: run folder " + (tmp.path() / "file").string() + " is not a folder");

  fs::create_directories(tmp.path() / "empty");
  CHECK(error_of([&] { render_plot_svg({tmp.path() / "empty"}); }) ==
        "plot: no metrics.jsonl in " + (tmp.path() / "empty").string());

  fs::path bad = make_run(tmp.path(), "bad", "{\"split\": \"train\", \"step\": 1, \"loss\": 2.0}\n\n{oops\n");
  std::string file = (bad / "metrics.jsonl").string();
  CHECK(error_of([&] { render_plot_svg({bad}); }) == "plot: " + file + ":3: not JSON");

  fs::path no_loss = make_run(tmp.path(), "noloss",
                              "{\"split\": \"train\", \"step\": 1, \"loss\": 2.0}\n"
                              "{\"split\": \"valid\", \"step\": 1}\n");
  CHECK(error_of([&] { render_plot_svg({no_loss}); }) ==
        "plot: " + (no_loss / "metrics.jsonl").string() + ":2: no \"loss\"");
  fs::path no_split = make_run(tmp.path(), "nosplit", "{\"step\": 1, \"loss\": 2.0}\n");
  CHECK(error_of([&] { render_plot_svg({no_split}); }).find(":1: no \"split\"") != std::string::npos);
  fs::path no_step = make_run(tmp.path(), "nostep", "{\"split\": \"train\", \"loss\": 2.0}\n");
  CHECK(error_of([&] { render_plot_svg({no_step}); }).find(":1: no \"step\"") != std::string::npos);

  fs::path blank = make_run(tmp.path(), "blank", "\n  \n");
  CHECK(error_of([&] { render_plot_svg({blank}); }) == "plot: no metrics in " + (blank / "metrics.jsonl").string());

  fs::path ok = make_run(tmp.path(), "ok", kMetrics);
  fs::path unwritable = tmp.path() / "no_such_dir" / "out.svg";
  CHECK(error_of([&] { write_plot_svg({ok}, unwritable); }) == "plot: cannot write " + unwritable.string());
}

TEST_CASE("plot: the command writes RUN_DIR/plot.svg for one run and says so") {
  TempDir tmp;
  fs::path a = make_run(tmp.path(), "a", kMetrics);
  CoutCapture out;
  CHECK(plot({a.string()}) == 0);
  CHECK(out.text.str() == "wrote " + (a / "plot.svg").string() + "\n");
  CHECK(read_text(a / "plot.svg").rfind("<svg", 0) == 0);
  CHECK(!fs::exists(a / "plot.svg.tmp"));
}

TEST_CASE("plot: the command takes --out, --x and --title around the run folders") {
  TempDir tmp;
  fs::path a = make_run(tmp.path(), "a", kMetrics), b = make_run(tmp.path(), "b", kMetrics);
  fs::path out = tmp.path() / "both.svg";
  CoutCapture captured;
  CHECK(plot({a.string(), "--x", "time", "--title", "A & B", b.string(), "--out", out.string()}) == 0);
  CHECK(captured.text.str() == "wrote " + out.string() + "\n");
  std::string svg = read_text(out);
  CHECK(svg.find(">A &amp; B</text>") != std::string::npos);
  CHECK(svg.find(">minutes</text>") != std::string::npos);
}

TEST_CASE("plot: the command's usage errors and --help") {
  TempDir tmp;
  fs::path a = make_run(tmp.path(), "a", kMetrics);
  CHECK_THROWS_AS(plot({"--x", "bogus", a.string()}), ks::cli::UsageError);
  CHECK_THROWS_WITH_AS(plot({}), "give at least one RUN_DIR", ks::cli::UsageError);
  CHECK_THROWS_WITH_AS(plot({"--out", "x.svg"}), "give at least one RUN_DIR", ks::cli::UsageError);
  CHECK_THROWS_AS(plot({a.string(), "--colour", "red"}), ks::cli::UsageError);
  CHECK_THROWS_AS(plot({a.string(), "--out"}), ks::cli::UsageError);
  CoutCapture captured;
  CHECK(plot({"--help"}) == 0);
  CHECK(captured.text.str().rfind("usage: keystone plot RUN_DIR...", 0) == 0);
  CHECK(!fs::exists(a / "plot.svg"));
}

TEST_CASE("plot: a log axis holds values just below a power of ten, below 1, and over many decades") {
  TempDir tmp;
  // floor(log10(0.09999999999999999)) is -1: the axis's grid once began above
  // the data, and the lower bound was read from before the grid (ASan:
  // heap-buffer-overflow; this runs at the end of every training).
  for (const char* lo : {"0.09999999999999999", "9.999999999999999e-05", "9.999999999999999e-300", "0.0003"}) {
    CAPTURE(std::string(lo));
    fs::path dir = make_run(tmp.path(), std::string("r") + lo, train_losses({"5", lo, "0.7"}));
    std::string svg = render_plot_svg({dir});
    CHECK(svg.find(">loss (log)</text>") != std::string::npos);
    CHECK(drawn_inside(svg));
  }
  std::string svg = render_plot_svg({make_run(tmp.path(), "below", train_losses({"5", "0.09999999999999999"}))});
  CHECK(svg.find(">0.05</text>") != std::string::npos);  // the 1-2-5 value below the data
  CHECK(svg.find(">5</text>") != std::string::npos);
}

TEST_CASE("plot: --log-y draws single points, equal values, and leaves out what a log axis cannot show") {
  TempDir tmp;
  PlotOptions log;
  log.log_y = true;
  const std::vector<std::vector<std::string>> cases = {
      {"0.3"},                       // a single point
      {"2", "2", "2"},               // equal values, on a 1-2-5 grid value
      {"0.37", "0.37"},              // equal values between grid values
      {"3", "0", "-1", "0.5"},       // zero and negative: not drawn
      {"3", "null", "1e-320", "1"},  // NaN (written as null) and a value below 1e-300: not drawn
  };
  for (const auto& losses : cases) {
    CAPTURE(losses.size());
    CAPTURE(losses[0]);
    std::string svg = render_plot_svg(
        {make_run(tmp.path(), "run" + losses[0] + std::to_string(losses.size()), train_losses(losses))}, log);
    CHECK(svg.find(">loss (log)</text>") != std::string::npos);
    CHECK(drawn_inside(svg));
  }
  std::string svg = render_plot_svg({make_run(tmp.path(), "mixed", train_losses({"3", "0", "-1", "0.5"}))}, log);
  size_t at = svg.find("points=\"");
  REQUIRE(at != std::string::npos);
  CHECK(count(svg.substr(at, svg.find('"', at + 8) - at), ",") == 2);  // 3 and 0.5 only
  // Nothing positive: a log axis has nothing to show, so the values get a linear one.
  std::string none = render_plot_svg({make_run(tmp.path(), "none", train_losses({"0", "-2"}))}, log);
  CHECK(none.find("(log)") == std::string::npos);
  CHECK(drawn_inside(none));
  // Without --log-y a narrow range stays linear; negative values never go log.
  CHECK(render_plot_svg({make_run(tmp.path(), "neg", train_losses({"-5", "100"}))}).find("(log)") == std::string::npos);
}

TEST_CASE("plot: gradient norm and bits per byte get their own panels, two to a row") {
  TempDir tmp;
  fs::path lm = make_run(tmp.path(), "lm",
                         R"({"split": "train", "step": 10, "loss": 5.0, "bpb": 2.5, "grad_norm": 40.0})"
                         "\n"
                         R"({"split": "train", "step": 20, "loss": 4.0, "bpb": 2.0, "grad_norm": 1.5})"
                         "\n"
                         R"({"split": "valid", "step": 20, "loss": 4.2, "ppl": 66.7, "bpb": 2.1})"
                         "\n"
                         R"({"split": "test", "step": 20, "loss": 4.3, "ppl": 73.7, "bpb": 2.15})"
                         "\n");
  std::string svg = render_plot_svg({lm});
  CHECK(svg.find(">bits per byte</text>") != std::string::npos);
  CHECK(svg.find(">gradient norm</text>") != std::string::npos);
  CHECK(svg.find(">gradient norm (log)</text>") != std::string::npos);  // 1.5..40 spans over 20x
  CHECK(svg.find(">accuracy</text>") == std::string::npos);
  // loss | bits per byte on the first row, gradient norm below across the whole row; the legend after them.
  CHECK(svg.find("<rect x=\"70\" y=\"60\" width=\"400\" height=\"270\"") != std::string::npos);
  CHECK(svg.find("<rect x=\"575\" y=\"60\" width=\"400\" height=\"270\"") != std::string::npos);
  CHECK(svg.find("<rect x=\"70\" y=\"400\" width=\"905\" height=\"270\"") != std::string::npos);
  CHECK(svg.find("height=\"752\"") != std::string::npos);
  std::string c = curves(svg);
  CHECK(count(c, "<polyline") == 3);             // train loss, train bpb, grad norm
  CHECK(count(c, "<path class=\"test\"") == 2);  // test loss and test bpb: the whole test split's point
  CHECK(drawn_inside(svg, 70, 60, 975, 670));
  // A run without them keeps its single loss panel.
  CHECK(render_plot_svg({make_run(tmp.path(), "plain", kMetrics)}).find("gradient norm") == std::string::npos);
}

TEST_CASE("plot: a seq2seq run's token error rate gets a panel, and an odd last panel spans its row, none is empty") {
  TempDir tmp;
  // A seq2seq run's records: loss, accuracy, exact match and TER, and the gradient norm: four panels, two rows full.
  fs::path s2s =
      make_run(tmp.path(), "s2s",
               R"({"split": "train", "step": 10, "loss": 2.0, "grad_norm": 3.0})"
               "\n"
               R"({"split": "valid", "step": 10, "loss": 1.9, "accuracy": 0.5, "exact_match": 0.1, "ter": 0.6})"
               "\n"
               R"({"split": "train", "step": 20, "loss": 1.0, "grad_norm": 2.0})"
               "\n"
               R"({"split": "valid", "step": 20, "loss": 1.1, "accuracy": 0.8, "exact_match": 0.5, "ter": 0.2})"
               "\n"
               R"({"split": "test", "step": 20, "loss": 1.2, "accuracy": 0.8, "exact_match": 0.4, "ter": 0.25})"
               "\n");
  std::string svg = render_plot_svg({s2s});
  CHECK(svg.find(">token error rate</text>") != std::string::npos);
  for (const char* box : {"x=\"70\" y=\"60\" width=\"400\"", "x=\"575\" y=\"60\" width=\"400\"",
                          "x=\"70\" y=\"400\" width=\"400\"", "x=\"575\" y=\"400\" width=\"400\""}) {
    CAPTURE(box);
    CHECK(svg.find(std::string("<rect ") + box + " height=\"270\"") != std::string::npos);
  }
  CHECK(count(curves(svg), "<path class=\"test\"") == 4);  // test loss, accuracy, exact match, TER
  // Without TER (a classifier): loss | accuracy, then the gradient norm across the second row.
  fs::path cls = make_run(tmp.path(), "cls",
                          R"({"split": "train", "step": 10, "loss": 2.0, "grad_norm": 3.0})"
                          "\n"
                          R"({"split": "valid", "step": 10, "loss": 1.9, "accuracy": 0.5})"
                          "\n");
  svg = render_plot_svg({cls});
  CHECK(svg.find(">token error rate</text>") == std::string::npos);
  CHECK(svg.find("<rect x=\"575\" y=\"60\" width=\"400\" height=\"270\"") != std::string::npos);
  CHECK(svg.find("<rect x=\"70\" y=\"400\" width=\"905\" height=\"270\"") != std::string::npos);
  CHECK(svg.find("<rect x=\"575\" y=\"400\"") == std::string::npos);
}

TEST_CASE("plot: --labels names the runs in the legend, one per run folder") {
  TempDir tmp;
  fs::path a = make_run(tmp.path(), "a", kMetrics, R"({"name": "from-config"})"),
           b = make_run(tmp.path(), "b", kMetrics);
  PlotOptions o;
  o.labels = {"softmax <4k>", "linear"};
  std::string svg = render_plot_svg({a, b}, o);
  CHECK(svg.find(">softmax &lt;4k&gt;</text>") != std::string::npos);
  CHECK(svg.find(">linear</text>") != std::string::npos);
  CHECK(svg.find("from-config") == std::string::npos);
  o.labels = {"only one"};
  CHECK(error_of([&] { render_plot_svg({a, b}, o); }) == "plot: 1 labels for 2 run folders; give one per run");

  fs::path out = tmp.path() / "l.svg";
  CoutCapture captured;
  CHECK(plot({a.string(), b.string(), "--labels", "x,y", "--log-y", "--out", out.string()}) == 0);
  std::string written = read_text(out);
  CHECK(written.find(">x</text>") != std::string::npos);
  CHECK(written.find(">loss (log)</text>") != std::string::npos);
  CHECK(plot({"--log-y", a.string(), "--out", out.string()}) == 0);  // a switch takes no value: a is a run folder
  CHECK_THROWS_WITH_AS(plot({a.string(), b.string(), "--labels", "x"}), "--labels: 1 labels for 2 run folders",
                       ks::cli::UsageError);
  for (const char* bad : {"x,,y", "x,", ",y", ""})
    CHECK_THROWS_WITH_AS(plot({a.string(), b.string(), "--labels", bad}),
                         ("--labels: an empty label in '" + std::string(bad) + "'").c_str(), ks::cli::UsageError);
}

TEST_CASE("plot: --seeds draws one mean curve per NAME-seedN group in a +- std band") {
  TempDir tmp;
  auto valid = [](double a, double b) {
    return str(R"({"split": "valid", "step": 100, "loss": )", a, "}\n", R"({"split": "valid", "step": 200, "loss": )",
               b, "}\n");
  };
  const fs::path s0 = make_run(tmp.path(), "x0", valid(3.0, 2.0), R"({"name": "mgk-seed0"})");
  const fs::path s1 = make_run(tmp.path(), "x1",
                               valid(4.0, 2.0) + R"({"split": "valid", "step": 300, "loss": 1.0})"
                                                 "\n",
                               R"({"name": "mgk-seed1"})");
  const fs::path other = make_run(tmp.path(), "y", valid(3.5, 2.5), R"({"name": "softmax-seed0"})");
  PlotOptions o;
  o.group_seeds = true;
  const std::string svg = render_plot_svg({s0, s1, other}, o);
  CHECK(svg.find("mgk (2 seeds)") != std::string::npos);
  CHECK(svg.find(">softmax<") != std::string::npos);  // a group of one keeps its name, draws no band
  CHECK(count(curves(svg), "<polygon") == 1);         // mgk's valid band only
  // without --seeds: three runs, no band
  const std::string plain = render_plot_svg({s0, s1, other});
  CHECK(count(curves(plain), "<polygon") == 0);
  CHECK(plain.find("mgk-seed1") != std::string::npos);
  // the mean is drawn at the steps both seeds reached (100, 200): one polyline of 2 points for mgk
  const std::string c = curves(svg);
  const size_t band = c.find("<polygon");
  REQUIRE(band != std::string::npos);
  std::istringstream pts(c.substr(c.find("points=\"", band) + 8,
                                  c.find('"', c.find("points=\"", band) + 8) - c.find("points=\"", band) - 8));
  int corners = 0;
  double x, y;
  char comma;
  while (pts >> x >> comma >> y) ++corners;
  CHECK(corners == 4);  // upper edge and lower edge at steps 100 and 200
}
