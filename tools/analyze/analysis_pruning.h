// tools/analyze/analysis_pruning.h — head importance and the pruning curve of
// `keystone analyze` (tools/analyze/analyze.h), after Michel, Levy and Neubig (2019),
// "Are Sixteen Heads Really Better than One?":
//
//   importance I_h = mean over batches of |∂L_batch / ∂ξ_h|,
//
// ξ_h the head gate (nn::Attention::head_gate, 1 for every head), L_batch the
// batch's mean training loss (tools/train/task.h's batch_loss) in eval mode, so no
// dropout. The pruning curve masks heads (ξ_h = 0) one at a time in
// increasing importance over the whole model, skipping a head that is the
// last unmasked one of its site, until every site keeps one head; after each
// mask the split is evaluated (tools/train/task.h's evaluate: loss, perplexity,
// accuracy, exact match for seq2seq when decodes are asked for).
// Not here: the forward-only statistics (tools/analyze/analysis_collect.h).
#pragma once

#include <optional>
#include <vector>

#include "datasets/dataset.h"
#include "models/model.h"
#include "tools/analyze/head_mask.h"
#include "tools/train/task.h"

namespace ks::tools {

// [site][head]. The model's gates are cleared afterwards.
std::vector<std::vector<double>> head_importance(models::Model& model, const std::vector<AttentionSite>& sites,
                                                 const data::Dataset& split, int64_t batch_size, int64_t max_batches);

struct PruningPoint {
  int64_t masked = 0;           // heads masked so far
  std::optional<HeadRef> head;  // the head this point masked (none for the first, unmasked point)
  EvalResult result;
};

// The curve from no head masked to one head per site (the order: ascending
// importance, ties by site then head). The model's gates are cleared afterwards.
std::vector<PruningPoint> pruning_curve(models::Model& model, const std::vector<AttentionSite>& sites,
                                        const std::vector<std::vector<double>>& importance, const data::Dataset& split,
                                        const EvalOptions& options);

}  // namespace ks::tools
