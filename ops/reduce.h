// ops/reduce.h — reductions over any set of dims: sum, mean, var/stddev, prod,
// max/min (with indices), amax/amin, argmax/argmin, logsumexp, norm.
//
// `dims` may be negative (counted from the end) and in any order; an empty
// list means every dim; a dim may not repeat. With keepdim the reduced dims
// stay as size 1, so the result broadcasts against the input:
//   x (B, T, C):  sum(x, {-1}) -> (B, T);  sum(x, {0, 2}, true) -> (1, T, 1)
//
// Dtypes: sum and prod keep the floating dtypes and turn int32, int64 and
// bool into int64 (integers accumulate in int64, wrapping on overflow, as
// PyTorch). mean, var, stddev, logsumexp and norm take the floating dtypes
// only. The max/min family takes the floating dtypes, int32 and int64 and
// keeps the dtype; indices are int64. float32 reductions accumulate in
// double, in an order fixed by the shape alone: results never depend on the
// thread count. bfloat16 and float16: sum and mean read them and accumulate
// in double; every other reduction runs on a float32 copy, its result
// rounded once (ops/reduce.cpp, run()); gradients come back in the 16-bit
// dtype.
//
// This file is not the elementwise or softmax family: those live elsewhere.
#pragma once

#include <vector>

#include "core/dispatch.h"
#include "core/tensor.h"

namespace ks {

using Dims = std::vector<int64_t>;

// Σ x. An empty reduction gives 0.
Tensor sum(const Tensor& x);  // all elements -> 0-dim
Tensor sum(const Tensor& x, const Dims& dims, bool keepdim = false);

// Σ x / n. An empty reduction gives NaN.
Tensor mean(const Tensor& x);
Tensor mean(const Tensor& x, const Dims& dims, bool keepdim = false);

// Σ (x - mean)² / (n - correction), like torch.var: correction 1 (the
// default) is the unbiased (Bessel) estimate, 0 the population variance
// (torch's unbiased=false). n - correction <= 0 gives NaN (0/0) or inf.
// Computed in two passes (mean, then centred squares with a compensation
// term), never as E[x²] - E[x]². Options are named so that a bool keepdim
// cannot silently become a correction:  var(x, {1}, {.correction = 0, .keepdim = true})
struct VarOptions {
  double correction = 1;
  bool keepdim = false;
};
Tensor var(const Tensor& x, const Dims& dims = {}, VarOptions opts = {});
// √var (torch.std; not named `std`, which would clash with namespace std
// wherever `using namespace ks` is in effect). Its gradient is 0 where the
// result is 0 (as PyTorch), not NaN.
Tensor stddev(const Tensor& x, const Dims& dims = {}, VarOptions opts = {});

// Π x. An empty reduction gives 1. The gradient is exact with zeros in x
// (product of the other elements), not g·y/x.
Tensor prod(const Tensor& x);
Tensor prod(const Tensor& x, const Dims& dims, bool keepdim = false);

// Largest/smallest element along one dim and its int64 index (the first one
// among ties; a NaN wins and its first index is returned, as PyTorch). The
// gradient flows to that index only. The dim must not be empty.
struct ValuesIndices {
  Tensor values;
  Tensor indices;
};
ValuesIndices max(const Tensor& x, int64_t dim, bool keepdim = false);
ValuesIndices min(const Tensor& x, int64_t dim, bool keepdim = false);
// Over all elements -> 0-dim; same as amax(x) / amin(x).
Tensor max(const Tensor& x);
Tensor min(const Tensor& x);
// Largest/smallest over dims, NaN propagating. The gradient is split evenly
// among the elements equal to the result (as torch.amax).
Tensor amax(const Tensor& x, const Dims& dims = {}, bool keepdim = false);
Tensor amin(const Tensor& x, const Dims& dims = {}, bool keepdim = false);
// int64 index of the first largest/smallest element, no gradient. Without a
// dim: the flat (row-major) index over all elements, as a 0-dim tensor.
Tensor argmax(const Tensor& x);
Tensor argmax(const Tensor& x, int64_t dim, bool keepdim = false);
Tensor argmin(const Tensor& x);
Tensor argmin(const Tensor& x, int64_t dim, bool keepdim = false);

// log Σ exp(x), computed as m + log Σ exp(x - m) with m the max, so large
// values do not overflow. A slice of all -inf (or an empty one) gives -inf,
// not NaN. Gradient: g · softmax(x) (0 for an all -inf slice).
Tensor logsumexp(const Tensor& x, const Dims& dims, bool keepdim = false);

// Vector p-norm over dims (torch.linalg.vector_norm): (Σ |x|^p)^(1/p) for
// p > 0; p = inf: max |x|; p = -inf: min |x|; p = 0: number of nonzeros.
// Negative finite p is rejected. Accumulates in double without rescaling, so
// float64 2-norms overflow past ~1e154 (as PyTorch). Gradients: at a zero
// result the gradient is 0 rather than NaN (p = 2 divides by the norm;
// PyTorch masks it the same way); p = ±inf splits the gradient evenly among
// ties; p = 0 has gradient 0.  norm(x, {-1}, {.p = 1, .keepdim = true})
struct NormOptions {
  double p = 2;
  bool keepdim = false;
};
Tensor norm(const Tensor& x, const Dims& dims = {}, NormOptions opts = {});

// Sums g over the dims that broadcasting stretched, so that it has `shape`:
// the backward of every broadcasting op. Returns g itself if it already fits.
Tensor sum_to(const Tensor& g, const Shape& shape);

// --- kernels ---
enum class ReduceOp {
  Sum,
  Prod,
  Mean,
  Var,
  Std,  // params.correction
  Max,
  Min,  // values only, NaN propagating
  ArgMax,
  ArgMin,  // values and int64 indices (first of ties, first NaN)
  LogSumExp,
  Norm,         // params.p (> 0, 0 or ±inf)
  ProdNonzero,  // product of the nonzero elements; zero count in `indices`
};
struct ReduceParams {
  double p = 2;
  double correction = 1;
};
// out has x's rank with size 1 at every reduced dim (reduce[d] true); contiguous;
// its dtype follows the op's rules above. `indices` (ArgMax, ArgMin,
// ProdNonzero only, else undefined) has out's shape, int64, contiguous;
// an index is the flat row-major position within the reduced dims.
using ReduceKernel = void(ReduceOp op, const Tensor& out, const Tensor& indices, const Tensor& x,
                          const std::vector<bool>& reduce, const ReduceParams& params);
extern KernelTable<ReduceKernel> reduce_kernel;

// The elementwise pieces of the reductions' backwards (no autograd): one table
// per piece of ReduceGradOps (ops/reduce_grad_formulas.h), filled by
// ops/reduce_grad_kernels.h. out = Op::f(in...), every input already a
// broadcast view of out's shape; p is norm's, for the pieces that take it.
using ReduceGradKernel = void(const Tensor& out, const std::vector<Tensor>& in, double p);
template <class Op> constinit inline KernelTable<ReduceGradKernel> reduce_grad_kernel("reduce_grad");

// Helpers for reduction ops: normalises dims into a per-dim mask, and the
// output shape with or without the reduced dims.
std::vector<bool> reduction_mask(const Dims& dims, int64_t ndim, const char* op);
Shape reduced_shape(const Shape& sizes, const std::vector<bool>& mask, bool keepdim);

}  // namespace ks
