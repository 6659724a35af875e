// tools/analyze/analysis_collect.h — what `keystone analyze` (tools/analyze/analyze.h)
// measures on the attention of a trained model from forward passes alone:
// attention maps of a few examples, head redundancy, the rank of each
// head's score and attention matrices, and the mixture statistics of
// MGK/sMGK heads. One AttentionCollector watches every site of a model; each
// batch is run with return_weights on (explicit weights, nn/attention/attention.h)
// and folded into running sums.
//
// Which (query, key) pairs count. A query position of a self-attention site
// counts when it is a real token: its own key is visible to it in every head
// (a padding position is a hidden key, so its diagonal weight is 0 in every
// head; a real one sees itself under the causal rule too, and softmax or the
// positive linear features give it a weight > 0). A cross-attention site's
// queries count where its layer's self-attention site's do; its keys count
// where some counted query gives them weight. Keys with weight 0 (masked)
// add nothing to a divergence, so "visible keys only" holds by construction.
//
// Definitions (the docs page docs/analysis.md cites them):
//   JS(i, j)      mean over counted queries of the Jensen–Shannon divergence
//                 (nats, in [0, ln 2]) between heads i and j's attention rows:
//                 H((P+Q)/2) − (H(P) + H(Q))/2 (Lin, 1991)
//   cos(i, j)     mean over counted queries of the cosine similarity of the
//                 two heads' outputs (record().heads: before W_o, gates applied)
//   rank          per example and head, the singular values of the (counted
//                 queries × counted keys) score and attention matrices;
//                 numerical rank = #σ > tol·σ_max, effective rank = exp of
//                 the entropy of σ/Σσ (Roy and Vetterli, 2007)
//   MGK           π per head; per counted pair with weight > 0 the
//                 responsibilities γ_r = softmax over r of the component
//                 logits: their mean entropy and how often each r wins; the
//                 mean distance between a position's component keys
// Not here: head importance and pruning (tools/analyze/analysis_pruning.h), files.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "datasets/loader.h"
#include "models/model.h"
#include "tools/analyze/head_mask.h"

namespace ks::tools {

struct CollectOptions {
  int64_t map_examples = 2;   // examples whose maps (all sites, all heads) are kept
  int64_t rank_examples = 2;  // examples whose matrices' singular values are computed
  double rank_tolerance = 1e-6;
};

// One example's attention at one site: weights (heads, rows, cols) over its
// counted queries and keys, and the tokens of those positions.
struct AttentionMap {
  int64_t example = 0;  // index in the data set
  std::string site;
  int64_t heads = 0, rows = 0, cols = 0;
  std::vector<float> weights;                       // (heads, rows, cols)
  std::vector<std::string> row_tokens, col_tokens;  // empty when the data has no text
};

class AttentionCollector {
 public:
  // `source_tokens` / `target_tokens` name ids for the figures' axes (either
  // may be null: no labels).
  AttentionCollector(models::Model& model, const CollectOptions& options, const data::Tokenizer* source_tokens,
                     const data::Tokenizer* target_tokens);
  ~AttentionCollector();  // return_weights off again
  AttentionCollector(const AttentionCollector&) = delete;
  AttentionCollector& operator=(const AttentionCollector&) = delete;

  // One forward pass of `batch` (on the model's device, no gradients) and its statistics.
  void add(const data::Batch& batch);

  const std::vector<AttentionSite>& sites() const { return sites_; }
  const std::vector<AttentionMap>& maps() const { return maps_; }
  // Per site: {"name", "kind", "family", "heads", "head_dim", "queries",
  //   "js": h×h, "js_mean_off_diagonal", "cosine": h×h, "cosine_mean_off_diagonal",
  //   "rank": {"tolerance", "examples": [{"example", "rows", "cols", "heads": [{"scores": {...},
  //            "attention": {...}, "components": [...], "mixture": {...}}]}]},
  //   "mgk": {"pi", "responsibility_entropy", "component_wins", "key_distance"}}
  // where each spectrum is {"singular_values", "numerical_rank", "effective_rank"}.
  nlohmann::json site_summaries() const;

 private:
  struct SiteSums;
  models::Model& model_;
  CollectOptions options_;
  const data::Tokenizer *source_tokens_, *target_tokens_;
  std::vector<AttentionSite> sites_;
  std::vector<SiteSums> sums_;
  std::vector<AttentionMap> maps_;
  int64_t rank_done_ = 0, maps_done_ = 0;
};

}  // namespace ks::tools
