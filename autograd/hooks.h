// autograd/hooks.h — code that runs during backward: on a tensor's gradient
// as soon as it is computed (Tensor::register_hook, retain_grad), and on a
// leaf once its .grad has taken the whole gradient of a backward.
//
//   HookHandle h = hidden.register_hook([](const Tensor& g) { return ks::clamp(g, -1, 1); });
//   hidden.retain_grad();                      // hidden.grad() after backward
//   auto p = ks::register_post_accumulate_grad_hook(weight, [&](const Tensor& w) {
//     start_all_reduce(w.grad());              // w.grad() now holds this backward's sum
//   });
//   ...
//   h.remove(); p.remove();
//
// A gradient hook sees the whole gradient of the tensor for this backward
// (the engine sums every use first) and may replace it; hooks run in
// registration order, then retain_grad's store. A non-leaf's hooks live on
// its grad_fn (which every later use of the tensor reaches); a leaf's on the
// leaf, and run before the gradient is added into .grad. Hooks run in grad()
// too (on the gradients it returns), on the thread that called backward,
// with grad mode on only under create_graph.
//
// A leaf's AccumulateGrad node runs once per backward, after every use of the
// leaf has sent its part, so a post-accumulate hook sees the whole gradient
// of this backward added into .grad (on top of what earlier backwards left
// there, as .grad accumulates), in the order the engine reaches the leaves
// (reverse creation order of the ops that used them), which is what lets
// distributed data parallelism (nn/data_parallel.h) start reducing the
// gradients of the last layers while backward still computes the first
// ones. A leaf that gets no gradient in a backward (unused) is not called. An
// exception from any hook stops the backward and propagates from backward().
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "core/tensor.h"

namespace ks {

class Node;

// `leaf` must be a leaf tensor that requires grad; throws otherwise.
HookHandle register_post_accumulate_grad_hook(const Tensor& leaf, std::function<void(const Tensor& leaf)> hook);

// Runs the leaf's post-accumulate hooks (AccumulateGrad calls it).
void run_post_accumulate_grad_hooks(const Tensor& leaf);

// The leaf's gradient hooks on `grad` (AccumulateGrad calls it first).
Tensor run_grad_hooks(const Tensor& leaf, Tensor grad);

// The hooks on the gradients of node's outputs, then retain_grad's stores (the engine calls it).
void run_grad_hooks(Node& node, std::vector<Tensor>& grads);

}  // namespace ks
