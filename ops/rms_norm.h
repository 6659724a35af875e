// ops/rms_norm.h — root-mean-square normalisation over the trailing dims
// (Zhang & Sennrich, 2019; Llama's RMSNorm), with fused forward and backward kernels.
//
//   y = x · rstd · weight + bias,   rstd = 1 / sqrt(mean(x²) + eps)
//
// x: (..., *normalized_shape), float32 or float64, any strides. mean(x²) is
// taken over the last normalized_shape.size() dims and accumulated in float64
// whatever x's dtype (as layer_norm's statistics are). weight and bias are
// optional (undefined Tensor()), each of shape normalized_shape and x's dtype;
// RMSNorm as Llama uses it has a weight and no bias. The result has x's shape.
//
// Forward saves the per-row rstd for backward, in float64 (one number per
// row). Backward computes dx, dweight and dbias in one pass, with dweight and
// dbias summed over rows in a fixed order (independent of the thread count).
// Double backward recomputes the forward from differentiable ops, as
// layer_norm's does.
// Not here: LayerNorm (ops/layer_norm.h), the nn::RMSNorm module (nn/norm*).
#pragma once

#include "core/dispatch.h"
#include "core/tensor.h"

namespace ks {

Tensor rms_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight = Tensor(),
                const Tensor& bias = Tensor(), double eps = 1e-6);

// --- kernels ---
// x viewed as (M, N), N = numel(normalized_shape). y: (M, N) contiguous;
// rstd: (M) contiguous float64; x, weight (N), bias (N): any strides; weight
// and bias may be undefined.
using RmsNormKernel = void(const Tensor& y, const Tensor& rstd, const Tensor& x, const Tensor& weight,
                           const Tensor& bias, double eps);
extern KernelTable<RmsNormKernel> rms_norm_kernel;
// Writes each defined output: dx (M, N), dweight (N), dbias (N), all
// contiguous. g: (M, N), any strides. x may be undefined when only dbias is
// wanted; weight undefined means ones.
using RmsNormBackwardKernel = void(const Tensor& dx, const Tensor& dweight, const Tensor& dbias, const Tensor& g,
                                   const Tensor& x, const Tensor& rstd, const Tensor& weight);
extern KernelTable<RmsNormBackwardKernel> rms_norm_backward_kernel;

}  // namespace ks
