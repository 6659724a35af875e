// ops/scan.h — running (prefix) sums along a dim.
//
// cumsum keeps x's dtype (float32, float64, int64, int32) and shape:
// out[..., t, ...] = sum_{s <= t} x[..., s, ...]. float32 sums run in double,
// so a long scan keeps its digits (the causal prefix sums of linear attention
// run over the whole sequence). Other reductions are in reduce.h.
#pragma once

#include "core/dispatch.h"
#include "core/tensor.h"

namespace ks {

//   x (B, T, D) -> cumsum(x, 1) (B, T, D)
Tensor cumsum(const Tensor& x, int64_t dim);

// --- kernels ---
// out (fresh, x's shape) = running sum of x along dim, from the last element
// backwards when `reverse` (the backward of a forward scan).
using CumsumKernel = void(const Tensor& out, const Tensor& x, int64_t dim, bool reverse);
extern KernelTable<CumsumKernel> cumsum_kernel;

}  // namespace ks
