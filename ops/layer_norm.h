// ops/layer_norm.h — layer normalisation over the trailing dims, with fused
// forward and backward kernels.
//
//   y = (x - mean) · rstd · weight + bias,   rstd = 1 / sqrt(var + eps)
//
// x: (..., *normalized_shape), float32 or float64, any strides. mean and the
// biased variance are taken over the last normalized_shape.size() dims, in
// float64 and in two passes (never E[x²] - E[x]², which cancels when the rows
// share a large offset). weight and bias are optional (undefined Tensor()),
// each of shape normalized_shape and x's dtype. The result has x's shape.
//
// Forward saves per-row mean and rstd for backward, in float64 whatever x's
// dtype (one number per row, so it costs nothing): rounded to float32, the
// mean of a row near 1e4 is off by up to 5e-4, which shifts x - mean for every
// element and puts percent-level errors into dweight when the rows' spread is
// small. Backward computes dx, dweight and dbias in one pass; dweight and dbias are summed
// over rows in a fixed order, so they do not depend on the thread count.
// Gradients are first-order (the backward itself is not differentiable).
// Not here: RMSNorm, batch/group norm, the nn::LayerNorm module.
#pragma once

#include "core/dispatch.h"
#include "core/tensor.h"

namespace ks {

Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight = Tensor(),
                  const Tensor& bias = Tensor(), double eps = 1e-5);

// --- kernels ---
// x viewed as (M, N), N = numel(normalized_shape). y: (M, N) contiguous;
// mean, rstd: (M) contiguous float64; x, weight (N), bias (N): any strides; weight
// and bias may be undefined.
using LayerNormKernel = void(const Tensor& y, const Tensor& mean, const Tensor& rstd, const Tensor& x,
                             const Tensor& weight, const Tensor& bias, double eps);
extern KernelTable<LayerNormKernel> layer_norm_kernel;
// Writes each defined output: dx (M, N), dweight (N), dbias (N), all
// contiguous. g: (M, N), any strides. x may be undefined when only dbias is
// wanted; weight undefined means ones.
using LayerNormBackwardKernel = void(const Tensor& dx, const Tensor& dweight, const Tensor& dbias, const Tensor& g,
                                     const Tensor& x, const Tensor& mean, const Tensor& rstd, const Tensor& weight);
extern KernelTable<LayerNormBackwardKernel> layer_norm_backward_kernel;

}  // namespace ks
