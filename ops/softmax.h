// ops/softmax.h — softmax and log_softmax along one dim, with fused kernels
// for forward and backward.
//
//   y = softmax(x, dim)       y_i = exp(x_i - m) / Σ_j exp(x_j - m),  m = max_j x_j
//   y = log_softmax(x, dim)   y_i = x_i - m - log Σ_j exp(x_j - m)
//
// x: float32 or float64, any shape and strides; dim may be negative. The
// result is contiguous, of x's shape and dtype. Sums accumulate in float64.
//
// Fully masked rows (every element -inf, as from an attention mask that hides
// all keys): softmax gives a row of zeros (not NaN) and log_softmax a row of
// -inf (PyTorch gives NaN for both); the gradient through such a row is zero.
// Rows that are only partly -inf are ordinary: the -inf entries get
// probability 0. A NaN anywhere in a row makes that whole row NaN.
//
// Backward saves only the output y: dx = y·(g - Σ g·y) for softmax and
// dx = g - exp(y)·Σ g for log_softmax. Not here: masking helpers, attention.
#pragma once

#include "core/dispatch.h"
#include "core/tensor.h"

namespace ks {

Tensor softmax(const Tensor& x, int64_t dim);
Tensor log_softmax(const Tensor& x, int64_t dim);

// --- kernels ---
// out: contiguous, x's shape; x: any strides; dim already wrapped (0 for a 0-d x).
using SoftmaxKernel = void(bool log, const Tensor& out, const Tensor& x, int64_t dim);
extern KernelTable<SoftmaxKernel> softmax_kernel;
// dx: contiguous; g: any strides; y: the forward output. All of one shape.
using SoftmaxBackwardKernel = void(bool log, const Tensor& dx, const Tensor& g, const Tensor& y, int64_t dim);
extern KernelTable<SoftmaxBackwardKernel> softmax_backward_kernel;

}  // namespace ks
