// autograd/checkpoint.h — activation checkpointing: trading memory for
// recompute, as torch.utils.checkpoint does.
//
//   auto out = ks::checkpoint([&](const std::vector<Tensor>& in) {
//     return std::vector<Tensor>{layer->forward(in[0])};
//   }, {x});
//
// The forward of `fn` runs with grad mode off, so none of its inner
// activations is kept; only its inputs are. Backward runs `fn` again, this
// time recording, from the same inputs and with the default generator put
// back where it stood (so dropout draws the same masks), backpropagates the
// outputs' gradients through that recomputation — into the parameters `fn`
// uses, as a plain backward would — and hands the inputs their gradients.
// The gradients are bit-identical to running `fn` without checkpointing.
//
// Limits (as PyTorch's reentrant checkpoint): its gradients cannot be
// differentiated again (create_graph), grad() reaches the inputs but
// parameters inside `fn` get theirs in .grad, and `fn` must be a function of
// its inputs, its parameters and the default generator alone.
#pragma once

#include <functional>
#include <vector>

#include "core/tensor.h"

namespace ks {

using CheckpointFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

std::vector<Tensor> checkpoint(const CheckpointFn& fn, const std::vector<Tensor>& inputs);

}  // namespace ks
