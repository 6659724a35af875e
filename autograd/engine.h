// autograd/engine.h — running the backward pass.
//
//   Tensor loss = ...;            // built with grad mode on
//   ks::backward(loss);           // leaves' .grad now hold dL/dleaf
//
// The engine walks the graph from the roots in reverse creation order, which
// is a topological order: a node runs only after every node that feeds it a
// gradient has run, and gradients meeting at a node are summed first.
// Afterwards each node's saved tensors are freed unless retain_graph is set.
#pragma once

#include <vector>

#include "autograd/node.h"

namespace ks {

// Backpropagates from `root`. `grad` defaults to 1 for a one-element root.
void backward(const Tensor& root, const Tensor& grad = Tensor(), bool retain_graph = false);
void backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& grads, bool retain_graph = false);

}  // namespace ks
