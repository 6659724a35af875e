// tools/analyze/analysis_summary.h — what `keystone analyze --compare` reads of an
// analysis.json (tools/analyze/analyze.h writes it; docs/analysis.md describes it):
// the model, the pruning curve and each site's redundancy and effective
// ranks, read once into plain numbers.
//
// The file is the user's, so it is read like any user file (nn/user_input.h:
// a regular file of bounded size, JSON of bounded depth, no repeated key) and
// every value through a checked accessor: a missing key or a value of the
// wrong type is a cli::UsageError (exit 2) naming the file and the key's path
// ("--compare: a.json: pruning.points[3].loss: missing"), never nlohmann's
// message, an assertion or a read of garbage. A number may be null (how
// nlohmann writes NaN); it reads as NaN.
// Not here: the table and the figures (tools/analyze/analysis_report.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ks::tools {

// The largest analysis.json read: far above what the longest analysis writes
// (a few MB), far below what would exhaust the machine.
inline constexpr uint64_t kMaxAnalysisBytes = uint64_t(256) << 20;

struct AnalysisSummary {
  std::string file;  // where it was read from
  std::string run;   // the run folder analysed
  std::string attention;
  int64_t heads = 0, head_dim = 0, params = 0, total_heads = 0;
  std::string metric;  // the pruning curve's headline metric ("accuracy", ...)
  struct Point {
    int64_t masked;  // heads masked so far
    double loss, metric;
  };
  std::vector<Point> points;  // the pruning curve, from no head masked
  struct Site {
    double js, cosine;                     // mean off-diagonal entries
    double erank_scores, erank_attention;  // mean effective ranks (NaN: none measured)
  };
  std::vector<Site> sites;
};

// From the text of an analysis.json; `file` names it in errors.
AnalysisSummary analysis_summary_from_json(std::string_view text, const std::string& file);
// From a file, or from DIR/analysis/analysis.json or DIR/analysis.json for a
// folder `given`; a cli::UsageError when there is none.
AnalysisSummary read_analysis_summary(const std::string& given);

}  // namespace ks::tools
