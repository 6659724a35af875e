// tests/tools/test_analysis_summary.cpp — what `keystone analyze --compare`
// reads of a user's analysis.json (tools/analyze/analysis_summary.h): the values of
// a well-formed file, and for a damaged one (a key missing, a value of the
// wrong type, nesting 100,000 deep, a repeated key, a FIFO) an error naming
// the file and the key, never a crash, an assertion or nlohmann's message.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tools/analyze/analysis_summary.h"
#include "tools/cli/cli.h"

using namespace ks;
using namespace ks::tools;
using json = nlohmann::json;

namespace {

// A small analysis.json as `keystone analyze` writes it (the keys --compare reads, and a few more).
json analysis() {
  return json::parse(R"({"schema": "keystone.analysis/1", "run": "/runs/lm-seed0", "split": "test",
    "model": {"attention": "mgk", "heads": 2, "head_dim": 8, "params": 1234, "total_heads": 4},
    "sites": [{"name": "layers.0.self_attn", "js_mean_off_diagonal": 0.25, "cosine_mean_off_diagonal": null,
               "rank": {"examples": [{"heads": [{"mixture": {"effective_rank": 2.0}, "attention": {"effective_rank": 3.0}},
                                                {"scores": {"effective_rank": 4.0}}]}]}}],
    "pruning": {"metric": "accuracy", "points": [{"masked": 0, "loss": 1.0, "accuracy": 0.5},
                                                 {"masked": 1, "loss": 1.5, "accuracy": null}]}})");
}

std::string error_of(const std::string& text) {
  try {
    (void)analysis_summary_from_json(text, "a.json");
  } catch (const cli::UsageError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("analysis summary: the values --compare uses, null read as NaN") {
  const AnalysisSummary s = analysis_summary_from_json(analysis().dump(), "a.json");
  CHECK(s.run == "/runs/lm-seed0");
  CHECK(s.attention == "mgk");
  CHECK(s.heads == 2);
  CHECK(s.total_heads == 4);
  CHECK(s.metric == "accuracy");
  REQUIRE(s.points.size() == 2);
  CHECK(s.points[1].masked == 1);
  CHECK(std::isnan(s.points[1].metric));
  REQUIRE(s.sites.size() == 1);
  CHECK(s.sites[0].js == 0.25);
  CHECK(std::isnan(s.sites[0].cosine));
  CHECK(s.sites[0].erank_scores == 3.0);  // the MGK head's mixture and the other head's scores
  CHECK(s.sites[0].erank_attention == 3.0);
}

TEST_CASE("analysis summary: a missing key or a value of the wrong type names the file and the key") {
  json a = analysis();
  a["pruning"]["points"][1].erase("loss");
  CHECK(error_of(a.dump()) == "--compare: a.json: pruning.points[1].loss: missing");
  a = analysis();
  a["model"]["heads"] = "two";
  CHECK(error_of(a.dump()) == "--compare: a.json: model.heads: expected an integer, got \"two\"");
  a = analysis();
  a["sites"][0]["rank"]["examples"] = {{{"heads", 3}}};
  CHECK(error_of(a.dump()) == "--compare: a.json: sites[0].rank.examples[0].heads: expected a list, got 3");
  a = analysis();
  a["pruning"]["points"][0].erase("accuracy");  // the metric the curve names
  CHECK(error_of(a.dump()) == "--compare: a.json: pruning.points[0].accuracy: missing");
  a = analysis();
  a["sites"] = json::object({{"x", 1}});
  CHECK(error_of(a.dump()) == "--compare: a.json: sites: expected a list, got {\"x\":1}");
  a = analysis();
  a["sites"][0]["rank"]["examples"][0]["heads"][1] = "head";
  CHECK(error_of(a.dump()) ==
        "--compare: a.json: sites[0].rank.examples[0].heads[1]: expected an object, got \"head\"");
  a = analysis();
  a["model"] = 1;
  CHECK(error_of(a.dump()) == "--compare: a.json: model: expected an object, got 1");
  a = analysis();
  a["model"]["params"] = 1e300;
  CHECK(error_of(a.dump()) == "--compare: a.json: model.params: expected an integer, got 1e+300");
  CHECK(error_of("[1]") ==
        "--compare: a.json is not an analysis.json of keystone analyze (schema keystone.analysis/1)");
}

TEST_CASE("analysis summary: nesting 100,000 deep and a repeated key are refused by name") {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  CHECK(error_of(R"({"schema": "keystone.analysis/1", "sites": )" + deep + "}") ==
        "--compare: a.json: JSON nested deeper than 64 levels of arrays and objects");
  std::string twice = analysis().dump();
  twice.insert(twice.rfind('}'), R"(, "run": "/elsewhere")");
  CHECK(error_of(twice) == "--compare: a.json: key run appears twice");
}

TEST_CASE("analysis summary: only a regular file is read") {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("ks_summary_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir / "analysis");
  REQUIRE(::mkfifo((dir / "analysis" / "analysis.json").c_str(), 0600) == 0);
  try {
    (void)read_analysis_summary(dir.string());
    FAIL("no error");
  } catch (const cli::UsageError& e) {
    CHECK(std::string(e.what()) ==
          "--compare: " + (dir / "analysis" / "analysis.json").string() + " is not a regular file (it is a FIFO)");
  }
  std::filesystem::remove_all(dir);
  CHECK_THROWS_AS((void)read_analysis_summary(dir.string()), cli::UsageError);  // gone: "no analysis found"
}
