// autograd/grad_accumulate.h — the one piece of arithmetic the engine needs:
// summing gradients that meet at a node or a leaf. It has its own kernel
// table (below ops/, which the engine must not depend on).
#pragma once

#include "core/dispatch.h"
#include "core/tensor.h"

namespace ks {

// acc += g, in place (same shape; g may have any strides). Bumps acc's version.
void grad_accumulate_(const Tensor& acc, const Tensor& g);
// A new contiguous tensor a + b (same shapes, any strides); differentiable
// when grad mode is on (a backward with create_graph).
Tensor grad_sum(const Tensor& a, const Tensor& b);

// Whether t may be reused in place, or kept, by whoever holds this handle:
// no other handle shares its TensorImpl, its storage or its version counter
// (so no view of it exists either), it carries no graph, and it is a
// contiguous tensor filling its storage exactly. The engine sums gradients
// into such a tensor in place, and a leaf keeps one as its .grad, where
// anything shared must be copied first (PyTorch's engine does the same).
bool unshared_dense(const Tensor& t);

// out = a + b, all of one shape and dtype; out may be a.
using GradAddKernel = void(const Tensor& out, const Tensor& a, const Tensor& b);
extern KernelTable<GradAddKernel> grad_add_kernel;

}  // namespace ks
