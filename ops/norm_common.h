// ops/norm_common.h — what layer_norm and rms_norm (ops/layer_norm.h,
// ops/rms_norm.h) share above their kernels: the argument checks and the
// backward node (first order through the op's fused kernel; a create_graph
// backward differentiates the forward written in ops).
// Not here: the statistics each op saves (captured by its kernel callback), kernels.
#pragma once

#include <functional>

#include "core/tensor.h"
#include "ops/reduce.h"  // Dims

namespace ks::norm_common {

// Throws "<op>: ..." unless normalized_shape is x's trailing dims, weight and
// bias (each may be undefined) match it in shape, x in dtype and device, and
// eps >= 0. Returns the number of rows, numel over the leading dims.
int64_t check_args(const char* op, const Tensor& x, const Shape& normalized_shape, const Tensor& weight,
                   const Tensor& bias, double eps);

// The last k dims of x.
Dims last_dims(const Tensor& x, int64_t k);

// y = forward(x, w, b) over the last k dims, in differentiable ops (w, b may be undefined).
using InOps = std::function<Tensor(const Tensor& x, const Tensor& w, const Tensor& b)>;
// Writes each defined gradient (dx like gy; dw, db like normalized_shape) with
// the op's backward kernel; x is undefined when only db is wanted, w when dx is not.
using BackwardKernel = std::function<void(const Tensor& dx, const Tensor& dw, const Tensor& db, const Tensor& gy,
                                          const Tensor& x, const Tensor& w)>;

// Records `node` for y when x, weight or bias needs a gradient. x is saved
// only when dx or dweight is wanted; weight and bias (parameters, alive anyway)
// for the recomputation of a create_graph backward.
void record_backward(const char* node, const Tensor& x, const Shape& normalized_shape, const Tensor& weight,
                     const Tensor& bias, const Tensor& y, InOps in_ops, BackwardKernel kernel);

}  // namespace ks::norm_common
