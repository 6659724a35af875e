// ops/loss.h — loss functions: cross_entropy (fused with log-softmax),
// nll_loss and mse_loss.
//
// Class losses follow PyTorch's layout: the class dim is dim 1.
//   logits / log_probs: (N, C) or (N, C, d1, ..., dk), or (C) for one sample
//   targets: int64, (N) or (N, d1, ..., dk), or () — each in [0, C) or ignore_index
// reduction None gives the per-position loss in targets' shape (0 at ignored
// positions); Sum adds them; Mean divides the sum by the number of positions
// whose target is not ignore_index. When every target is ignored, Mean gives
// 0 and a zero gradient (PyTorch gives NaN). There are no class weights.
//
// cross_entropy with label smoothing ε uses the target distribution
// q = (1 - ε)·onehot(target) + ε/C, so a position's loss is
// -Σ_c q_c · log_softmax(x)_c and its gradient is softmax(x) - q (times the
// incoming gradient, divided by the count for Mean). The forward keeps only
// one log-sum-exp per position for backward, besides the logits.
//
// mse_loss(input, target): (input - target)², same shape and dtype; Mean
// divides by the element count (an empty input gives 0). All losses take
// float32 or float64; gradients are first-order. Not here: the nn modules,
// class weights, BCE and friends.
#pragma once

#include <cstdint>

#include "core/dispatch.h"
#include "core/tensor.h"

namespace ks {

enum class Reduction { None, Mean, Sum };

struct CrossEntropyOptions {
  int64_t ignore_index = -100;
  double label_smoothing = 0.0;  // in [0, 1)
  Reduction reduction = Reduction::Mean;
};

// ks::cross_entropy(logits, targets, {.ignore_index = 0, .label_smoothing = 0.1});
Tensor cross_entropy(const Tensor& logits, const Tensor& targets, const CrossEntropyOptions& opts = {});
Tensor nll_loss(const Tensor& log_probs, const Tensor& targets, int64_t ignore_index = -100,
                Reduction reduction = Reduction::Mean);
Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean);

// --- kernels ---
// Class losses see rows: x (P, C) contiguous, targets (P) contiguous int64.
struct ClassLossSpec {
  bool from_logits;  // true: cross_entropy (x are logits); false: nll_loss (x are log-probabilities)
  int64_t ignore_index;
  double label_smoothing;  // 0 for nll_loss
};
// loss (P): each position's loss, 0 where ignored. lse (P): log Σ_c exp(x_c)
// per row (from_logits only, else undefined). denom (0-d, x's dtype): the
// number of non-ignored positions, at least 1. Throws on a target outside
// [0, C) that is not ignore_index.
using ClassLossKernel = void(const Tensor& loss, const Tensor& lse, const Tensor& denom, const Tensor& x,
                             const Tensor& targets, const ClassLossSpec& spec);
extern KernelTable<ClassLossKernel> class_loss_kernel;
// dx (P, C) contiguous; gpos (P), any strides (stride 0 for a reduced loss):
// the gradient of each position's loss. x and lse are read only from_logits.
using ClassLossBackwardKernel = void(const Tensor& dx, const Tensor& gpos, const Tensor& x, const Tensor& lse,
                                     const Tensor& targets, const ClassLossSpec& spec);
extern KernelTable<ClassLossBackwardKernel> class_loss_backward_kernel;

// reduce: out (0-d) = scale · Σ (a - b)²; else out (a's shape, contiguous) = (a - b)².
using MseKernel = void(const Tensor& out, const Tensor& a, const Tensor& b, bool reduce, double scale);
extern KernelTable<MseKernel> mse_kernel;
// Writes each defined output: da = 2·scale·(a - b)·g and db = -da (contiguous);
// a, b, g of one shape, any strides (g has stride 0 for a reduced loss).
using MseBackwardKernel = void(const Tensor& da, const Tensor& db, const Tensor& a, const Tensor& b, const Tensor& g,
                               double scale);
extern KernelTable<MseBackwardKernel> mse_backward_kernel;

}  // namespace ks
