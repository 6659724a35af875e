// ops/rms_norm_formulas.h — what the CPU and CUDA rms_norm kernels share
// (ops/rms_norm.h): the per-element formulas. The entries (operands made
// contiguous, the dtype dispatch, the affine cases, the empty backward) are
// layer_norm's (ops/layer_norm_formulas.h), which these kernels reuse.
//
// For a row x of N elements, in double: ms = Σx² / N, rstd = 1/√(ms + eps),
// x̂ = x·rstd, y = x̂·w + b. Backward with gw = g·w, c = mean(gw·x̂):
//   dx = rstd·(gw − x̂·c),  dw = Σ_rows g·x̂,  db = Σ_rows g.
// (layer_norm's dx without the mean(gw) term: nothing was subtracted.)
// Not here: the row loops and the reductions (each backend's own, each deterministic).
#pragma once

#include "ops/layer_norm_formulas.h"

namespace ks::rms_norm_formulas {

using layer_norm_formulas::affine;
using layer_norm_formulas::backward_inputs;
using layer_norm_formulas::BackwardInputs;
using layer_norm_formulas::forward_entry;
using layer_norm_formulas::ForwardInputs;
using layer_norm_formulas::rstd_of;
using layer_norm_formulas::with_affine;

KS_HOST_DEVICE inline double input_grad(double gw, double xhat, double c, double rstd) {
  return rstd * (gw - xhat * c);
}

}  // namespace ks::rms_norm_formulas
