// ops/reduce.h — reductions over any set of dims.
//
// `dims` may be negative (counted from the end) and in any order; an empty
// list means every dim. With keepdim the reduced dims stay as size 1, so the
// result broadcasts against the input.
#pragma once

#include <vector>

#include "core/dispatch.h"
#include "core/tensor.h"

namespace ks {

using Dims = std::vector<int64_t>;

Tensor sum(const Tensor& x);  // all elements -> 0-dim
Tensor sum(const Tensor& x, const Dims& dims, bool keepdim = false);

// Sums g over the dims that broadcasting stretched, so that it has `shape`:
// the backward of every broadcasting op. Returns g itself if it already fits.
Tensor sum_to(const Tensor& g, const Shape& shape);

// --- kernels ---
enum class ReduceOp { Sum };
// out has x's rank with size 1 at every reduced dim (reduce[d] true); contiguous.
using ReduceKernel = void(ReduceOp op, const Tensor& out, const Tensor& x, const std::vector<bool>& reduce);
extern KernelTable<ReduceKernel> reduce_kernel;

// Helpers for reduction ops: normalises dims into a per-dim mask, and the
// output shape with or without the reduced dims.
std::vector<bool> reduction_mask(const Dims& dims, int64_t ndim, const char* op);
Shape reduced_shape(const Shape& sizes, const std::vector<bool>& mask, bool keepdim);

}  // namespace ks
