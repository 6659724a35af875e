// ops/embedding.h — embedding lookup (a row gather) and its scatter-add
// backward.
//
//   out = embedding(weight, indices, padding_idx)     out[..., :] = weight[indices[...], :]
//
// weight: (V, D), any dtype and strides; indices: int64, any shape and
// strides, each in [0, V) (an index outside throws, naming it and V).
// out: (*indices.shape, D), contiguous, weight's dtype.
// Backward gives a dense (V, D) gradient: rows are summed over every position
// that looked them up (repeated indices accumulate), in float64 for float32,
// in position order, so the result does not depend on the thread count; the
// row padding_idx (if not -1) always gets zero gradient. Not here: sparse
// gradients, max_norm renormalisation, the nn::Embedding module.
#pragma once

#include "core/dispatch.h"
#include "core/tensor.h"

namespace ks {

Tensor embedding(const Tensor& weight, const Tensor& indices, int64_t padding_idx = -1);

// --- kernels ---
// out: (n, D) contiguous (n = indices.numel()); weight: (V, D) any strides;
// indices: int64, any shape and strides. Throws on an index outside [0, V).
using EmbeddingKernel = void(const Tensor& out, const Tensor& weight, const Tensor& indices);
extern KernelTable<EmbeddingKernel> embedding_kernel;
// dweight: (V, D) contiguous, fully written; g: (n, D) any strides;
// indices already validated by the forward. padding_idx: -1 for none.
using EmbeddingBackwardKernel = void(const Tensor& dweight, const Tensor& g, const Tensor& indices,
                                     int64_t padding_idx);
extern KernelTable<EmbeddingBackwardKernel> embedding_backward_kernel;

}  // namespace ks
