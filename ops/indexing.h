// ops/indexing.h — picking and scattering elements by int64 index tensors.
//
// x keeps its dtype and device; index tensors are kInt64 on x's device, and
// every index must lie in [0, size) of the dim it addresses (no negative
// indices, as in PyTorch), else the op throws naming the index and the size.
// The scatters add in a fixed order (ascending position in the index), so
// their results — and the backward of index_select and gather — do not depend
// on the thread count. Block ops (cat, split, ...) are in shape.h.
#pragma once

#include "core/dispatch.h"
#include "core/tensor.h"

namespace ks {

// Rows of x along dim, in the order of index (1-D, or 0-d for one row).
//   x (N, D), index (M) -> index_select(x, 0, index) (M, D), out[i] = x[index[i]]
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index);
// x with src's slices added at the rows named by index (repeats add up):
// out[..., index[i], ...] += src[..., i, ...]; src is x's shape with
// size(dim) = index.numel(), same dtype.
Tensor index_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);

// out[i][j][k] = x[i][index[i][j][k]][k] for dim 1 (likewise for any dim);
// index has x's rank and index.size(d) <= x.size(d) for d != dim; the result
// has index's shape.
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index);
// x with out[i][index[i][j][k]][k] += src[i][j][k] for dim 1 (likewise for
// any dim), over index's shape: index has x's rank, index.size(d) <=
// src.size(d) for every d and <= x.size(d) for d != dim.
Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);

// --- kernels (dim already wrapped; index checked for dtype and shape) ---
// out = x with size(dim) = index.numel(); index 1-D. Throws on a bad index.
using IndexSelectKernel = void(const Tensor& out, const Tensor& x, int64_t dim, const Tensor& index);
extern KernelTable<IndexSelectKernel> index_select_kernel;
// In place: out[..., index[i], ...] += src[..., i, ...] in ascending i; index 1-D.
using IndexAddKernel = void(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src);
extern KernelTable<IndexAddKernel> index_add_kernel;
// out (index's shape) = x gathered along dim. Throws on a bad index.
using GatherKernel = void(const Tensor& out, const Tensor& x, int64_t dim, const Tensor& index);
extern KernelTable<GatherKernel> gather_kernel;
// In place: out scatter-added from src over index's shape, in ascending
// position along dim. Throws on a bad index.
using ScatterAddKernel = void(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src);
extern KernelTable<ScatterAddKernel> scatter_add_kernel;

}  // namespace ks
