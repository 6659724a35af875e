// tools/analyze/analysis_summary.cpp — reading an analysis.json for --compare with
// checked accessors (tools/analyze/analysis_summary.h).
#include "tools/analyze/analysis_summary.h"

#include <cmath>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "nn/user_input.h"
#include "tools/cli/cli.h"

namespace ks::tools {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// One value of the document and its path from the top ("sites[2].rank"): every
// read checks the value's type, and a failed check names the file and the path.
class Value {
 public:
  Value(const json& j, const std::string& file, std::string path) : j_(j), file_(file), path_(std::move(path)) {}

  bool has(const std::string& key) const {
    expect(j_.is_object(), "an object");
    return j_.contains(key);
  }
  Value operator[](const std::string& key) const {
    expect(j_.is_object(), "an object");
    if (!j_.contains(key)) fail(str(where(key), ": missing"));
    return Value(j_.at(key), file_, where(key));
  }
  std::vector<Value> elements() const {
    expect(j_.is_array(), "a list");
    std::vector<Value> out;
    for (size_t i = 0; i < j_.size(); ++i) out.emplace_back(j_[i], file_, str(path_, "[", i, "]"));
    return out;
  }
  // A number; null (how nlohmann writes NaN) reads as NaN.
  double number() const {
    if (j_.is_null()) return kNaN;
    expect(j_.is_number(), "a number");
    return j_.get<double>();
  }
  int64_t integer() const {
    expect(j_.is_number_integer() && !(j_.is_number_unsigned() && j_.get<uint64_t>() > uint64_t(INT64_MAX)),
           "an integer");
    return j_.get<int64_t>();
  }
  std::string string() const {
    expect(j_.is_string(), "a string");
    return j_.get<std::string>();
  }

 private:
  std::string where(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }
  void expect(bool ok, const char* kind) const {
    if (!ok) fail(str(path_.empty() ? "the document" : path_, ": expected ", kind, ", got ", nn::json_excerpt(j_)));
  }
  [[noreturn]] void fail(const std::string& problem) const {
    throw cli::UsageError(str("--compare: ", file_, ": ", problem));
  }
  const json& j_;
  const std::string& file_;
  std::string path_;
};

// The mean effective rank of one kind ("scores" or "attention") over a site's
// heads and examples; an MGK head's scores are its mixture logits. NaN: none.
double mean_effective_rank(const Value& site, const std::string& kind) {
  double sum = 0;
  int64_t n = 0;
  for (const Value& example : site["rank"]["examples"].elements())
    for (const Value& head : example["heads"].elements()) {
      const std::string key = head.has(kind) ? kind : kind == "scores" && head.has("mixture") ? "mixture" : "";
      if (key.empty()) continue;  // not measured for this head
      sum += head[key]["effective_rank"].number();
      ++n;
    }
  return n > 0 ? sum / double(n) : kNaN;
}

}  // namespace

AnalysisSummary analysis_summary_from_json(std::string_view text, const std::string& file) {
  json doc;
  try {
    doc = nn::try_parse_json(text, str("--compare: ", file));
  } catch (const Error& e) {  // too deep, a repeated key: a malformed analysis, like any other
    throw cli::UsageError(e.what());
  }
  if (doc.is_discarded() || !doc.is_object() || doc.value("schema", json()) != "keystone.analysis/1")
    throw cli::UsageError("--compare: " + file +
                          " is not an analysis.json of keystone analyze (schema keystone.analysis/1)");
  const Value a(doc, file, "");
  AnalysisSummary s;
  s.file = file;
  s.run = a["run"].string();
  const Value model = a["model"];
  s.attention = model["attention"].string();
  s.heads = model["heads"].integer();
  s.head_dim = model["head_dim"].integer();
  s.params = model["params"].integer();
  s.total_heads = model["total_heads"].integer();
  const Value pruning = a["pruning"];
  s.metric = pruning["metric"].string();
  for (const Value& p : pruning["points"].elements())
    s.points.push_back({p["masked"].integer(), p["loss"].number(), p[s.metric].number()});
  for (const Value& site : a["sites"].elements())
    s.sites.push_back({site["js_mean_off_diagonal"].number(), site["cosine_mean_off_diagonal"].number(),
                       mean_effective_rank(site, "scores"), mean_effective_rank(site, "attention")});
  return s;
}

AnalysisSummary read_analysis_summary(const std::string& given) {
  fs::path p = given;
  std::error_code ec;
  if (fs::is_directory(p, ec))
    p = fs::exists(p / "analysis" / "analysis.json", ec) ? p / "analysis" / "analysis.json" : p / "analysis.json";
  if (!fs::exists(p, ec))
    throw cli::UsageError("--compare: " + given + ": no analysis found (looked for " + p.string() +
                          "; run `keystone analyze --run " + given + "` first)");
  std::string text;
  try {
    text = nn::read_regular_file(p.string(), kMaxAnalysisBytes, "--compare");
  } catch (const Error& e) {  // a FIFO, a device, a folder, too large
    throw cli::UsageError(e.what());
  }
  return analysis_summary_from_json(text, p.string());
}

}  // namespace ks::tools
