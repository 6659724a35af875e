// examples/squareplus/squareplus.h — squareplus(x, b) = (x + √(x² + b)) / 2, a smooth ReLU
// (Barron, 2021), added by a project outside Keystone the way Keystone adds its own
// ops: a public function (squareplus.cpp: checks, autograd), one kernel table
// per direction, and kernels written once over the backends' loops
// (kernels.h) that each backend registers in its own file (cpu.cpp; cuda.cu
// when Keystone has CUDA). Not a Keystone op: nothing in Keystone names it.
#pragma once

#include "core/dispatch.h"
#include "core/tensor.h"

namespace myops {

// x: float32 or float64, any shape and strides, on the CPU or a GPU; b > 0.
// Returns a contiguous tensor of x's shape, dtype and device; differentiable in x.
ks::Tensor squareplus(const ks::Tensor& x, double b = 4.0);

// The kernel tables the backends fill (KS_REGISTER_KERNEL in cpu.cpp and cuda.cu).
// Forward: out = squareplus(x, b). Backward: grad_x = grad_out · (1 + x / √(x² + b)) / 2.
// All tensors have x's shape; out and grad_x are contiguous.
using SquareplusKernel = void(const ks::Tensor& out, const ks::Tensor& x, double b);
using SquareplusBackwardKernel = void(const ks::Tensor& grad_x, const ks::Tensor& grad_out, const ks::Tensor& x,
                                      double b);
inline ks::KernelTable<SquareplusKernel> squareplus_kernel{"squareplus"};
inline ks::KernelTable<SquareplusBackwardKernel> squareplus_backward_kernel{"squareplus_backward"};

}  // namespace myops
