// autograd/checkpoint.h — activation checkpointing: trading memory for
// recompute, as torch.utils.checkpoint does.
//
//   auto out = ks::checkpoint([&](const std::vector<Tensor>& in) {
//     return std::vector<Tensor>{layer->forward(in[0])};
//   }, {x});
//
// Only `fn`'s inputs and outputs are kept: its forward records a graph just
// long enough to learn which leaves (parameters, captured tensors) it reads,
// then drops it with every inner activation. Backward runs `fn` again,
// recording, from the same inputs and with the default generator put back
// where it stood (so dropout draws the same masks), and differentiates that
// recomputation: the inputs and the leaves get their gradients through the
// one checkpoint node, as from any op, so backward() accumulates them,
// grad() returns them (parameters inside `fn` included, .grad untouched),
// hooks fire once per leaf, and under create_graph they are differentiable
// again. The gradients are bit-identical to running `fn` without
// checkpointing. Memory peaks at one call's activations, in forward as in
// the recomputation.
//
// `fn` must be a function of its inputs, the leaves it reads and the default
// generator alone, and must read the same leaves when run again.
#pragma once

#include <functional>
#include <vector>

#include "core/tensor.h"

namespace ks {

using CheckpointFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

std::vector<Tensor> checkpoint(const CheckpointFn& fn, const std::vector<Tensor>& inputs);

}  // namespace ks
