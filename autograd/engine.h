// autograd/engine.h — running the backward pass.
//
//   Tensor loss = ...;                       // built with grad mode on
//   ks::backward(loss);                      // leaves' .grad now hold dL/dleaf
//   auto [gx] = ks::grad({loss}, {x});       // or: dL/dx returned, .grad untouched
//
// The engine walks the graph from the roots in reverse creation order, which
// is a topological order: a node runs only after every node that feeds it a
// gradient has run, and gradients meeting at a node are summed first.
// Afterwards each node's saved tensors are freed unless retain_graph is set.
//
// Higher order (PyTorch's create_graph): the gradients are computed with grad
// mode on, so they carry a graph and can be differentiated again —
//   Tensor gx = ks::grad({loss}, {x}, {}, {.create_graph = true})[0];
//   Tensor hv = ks::grad({ks::sum(ks::mul(gx, v))}, {x})[0];   // Hessian · v
// An op whose backward is kernels, not differentiable ops, hands out
// gradients that throw, naming the op, if differentiated (node.h).
#pragma once

#include <functional>
#include <vector>

#include "autograd/node.h"

namespace ks {

struct GradOptions {
  bool retain_graph = false;  // keep saved tensors for another backward (implied by create_graph)
  bool create_graph = false;  // record the backward itself, for higher-order gradients
  bool allow_unused = false;  // grad(): an input the outputs do not depend on gets an undefined tensor, not an error
};

// Backpropagates from `root`, adding into the .grad of the leaves it reaches.
// `grad` defaults to 1 for a one-element root.
void backward(const Tensor& root, const Tensor& grad = Tensor(), bool retain_graph = false, bool create_graph = false);
void backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& grads, bool retain_graph = false,
              bool create_graph = false);

// The gradients of `outputs` (weighted by `grad_outputs`, default 1 for
// one-element outputs) with respect to each of `inputs` — leaves or not —
// returned rather than accumulated: no .grad is touched.
std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs = {}, GradOptions options = {});

// grad() for a recomputation inside a node's backward (autograd/checkpoint.h):
// the node hands what it returns on to the outer walk, which runs the hooks
// of the leaves among `inputs`, so this walk leaves them out (each runs once).
std::vector<Tensor> grad_inside_backward(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                                         const std::vector<Tensor>& grad_outputs, GradOptions options);

// How an op whose backward is a kernel supports create_graph: under it, the
// op's closure returns the gradients of `forward` — the op restated in
// differentiable ops — at its saved inputs (which unpack with their history),
// weighted by `grad_outputs`. Undefined for inputs that need no gradient.
// The tensor a recomputation starts from in place of `x`: x's value, with an
// identity node of its own where grad() takes x's gradient — without
// walking on into x's history (another input may lie upstream of x, and
// would collect a second share), yet linked to it, so the gradient's own
// graph reaches x under create_graph. Needs grad mode on and x to require grad.
Tensor recompute_entry(const Tensor& x);

std::vector<Tensor> grad_by_recompute(const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& forward,
                                      const std::vector<Tensor>& inputs, const std::vector<Tensor>& grad_outputs);

}  // namespace ks
