// ops/linear_cross_entropy.h — an output layer and cross-entropy in one op,
// chunked over rows, so training never holds the (N, V) logits of the whole
// batch:
//
//   loss = cross_entropy(x · weightᵀ + bias, targets, opts)
//   x (..., d), weight (V, d), bias (V) or undefined, targets (...) int64
//
// The forward computes `chunk_rows` rows of logits at a time (one GEMM, then
// the same row kernel cross_entropy uses), keeping per row only the loss and
// the log-sum-exp. When gradients are wanted and the loss is reduced (Mean,
// Sum), it also turns each chunk's logits into ∂loss/∂logits in place and
// feeds the two backward GEMMs right away (∂x for the chunk's rows, ∂weight
// accumulated over chunks), as Liger's fused kernels do: the backward only
// scales them by the incoming gradient, and the GEMM count stays that of the
// unfused path (3). Per-row losses (Reduction::None) recompute each chunk's
// logits in backward instead (4 GEMMs). Peak memory for the logits is
// chunk_rows · V instead of 2 · N · V (the logits and their gradient).
//
// Numerics: in one chunk (chunk_rows >= N) it runs the very GEMMs and
// reductions of linear + cross_entropy, and the loss and ∂x are bit-identical
// (tested). In several chunks the loss and ∂x agree to float32 round-off, not
// bit for bit: OpenBLAS's result for a row depends on how many rows the call
// has (its small-matrix kernels, its K blocking), and ∂weight sums the
// chunks' products in another order than one GEMM over all rows. Tolerances
// are in the tests. So models use it only when asked (model.loss_chunk_rows),
// and a run's float32 numerics never change under it by surprise. Any device
// with gemm and the class-loss kernels runs it (CPU, CUDA). Float32/float64.
// create_graph differentiates the unfused composition (grad_by_recompute).
// Not here: the unfused ops (ops/linalg.h, ops/loss.h), label-smoothed
// vocab-parallel variants.
#pragma once

#include <cstdint>

#include "core/tensor.h"
#include "ops/loss.h"

namespace ks {

// chunk_rows <= 0: a chunk of about 8 MiB of logits (at least 64 rows).
Tensor linear_cross_entropy(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& targets,
                            const CrossEntropyOptions& opts = {}, int64_t chunk_rows = 0);

}  // namespace ks
