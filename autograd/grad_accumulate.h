// autograd/grad_accumulate.h — the one piece of arithmetic the engine needs:
// summing gradients that meet at a node or a leaf. It has its own kernel
// table (below ops/, which the engine must not depend on).
#pragma once

#include "core/dispatch.h"
#include "core/tensor.h"

namespace ks {

// acc += g, in place (same shape; g may have any strides). Bumps acc's version.
void grad_accumulate_(const Tensor& acc, const Tensor& g);
// A new contiguous tensor a + b (same shapes, any strides).
Tensor grad_sum(const Tensor& a, const Tensor& b);

// out = a + b, all of one shape and dtype; out may be a.
using GradAddKernel = void(const Tensor& out, const Tensor& a, const Tensor& b);
extern KernelTable<GradAddKernel> grad_add_kernel;

}  // namespace ks
