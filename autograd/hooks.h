// autograd/hooks.h — gradient hooks: code that runs during backward as soon
// as a leaf's gradient is complete.
//
//   auto h = ks::register_post_accumulate_grad_hook(weight, [&](const Tensor& w) {
//     start_all_reduce(w.grad());   // w.grad() now holds this backward's sum
//   });
//   ...
//   h.remove();
//
// A leaf's AccumulateGrad node runs once per backward, after every use of the
// leaf has sent its part (the engine sums them first), so the hook sees the
// whole gradient of this backward added into .grad (on top of what earlier
// backwards left there, as .grad accumulates). It runs on the thread that
// called backward, with grad mode off, in the order the engine reaches the
// leaves (reverse creation order of the ops that used them), which is what
// lets distributed data parallelism (nn/data_parallel.h) start reducing the
// gradients of the last layers while backward still computes the first
// ones. A leaf that gets no gradient in a backward (unused) is not called. An
// exception from a hook stops the backward and propagates from backward().
// Not here: hooks on non-leaf tensors or that change a gradient (register
// those as an op with ks::Function instead).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "core/tensor.h"

namespace ks {

class HookHandle {
 public:
  HookHandle() = default;
  HookHandle(std::weak_ptr<TensorImpl> leaf, uint64_t id) : leaf_(std::move(leaf)), id_(id) {}
  // Unregisters the hook (nothing if it was removed, or the leaf is gone).
  void remove();

 private:
  std::weak_ptr<TensorImpl> leaf_;
  uint64_t id_ = 0;
};

// `leaf` must be a leaf tensor that requires grad; throws otherwise.
HookHandle register_post_accumulate_grad_hook(const Tensor& leaf, std::function<void(const Tensor& leaf)> hook);

// Runs the leaf's hooks (AccumulateGrad calls it).
void run_post_accumulate_grad_hooks(const Tensor& leaf);

}  // namespace ks
