// autograd/checkpoint.cpp — the checkpoint node: forward without a graph,
// backward by recomputing with the saved generator state.
#include "autograd/checkpoint.h"

#include "autograd/engine.h"
#include "autograd/node.h"
#include "core/random.h"

namespace ks {
namespace {

// Puts the default generator at a saved state for a scope, then back where it was.
class GeneratorReplay {
 public:
  GeneratorReplay(uint64_t seed, uint64_t offset)
      : now_seed_(default_generator().seed()), now_offset_(default_generator().offset()) {
    default_generator().set_state(seed, offset);
  }
  ~GeneratorReplay() { default_generator().set_state(now_seed_, now_offset_); }
  GeneratorReplay(const GeneratorReplay&) = delete;
  GeneratorReplay& operator=(const GeneratorReplay&) = delete;

 private:
  uint64_t now_seed_, now_offset_;
};

}  // namespace

std::vector<Tensor> checkpoint(const CheckpointFn& fn, const std::vector<Tensor>& inputs) {
  KS_CHECK(fn != nullptr, "checkpoint: empty function");
  if (!GradMode::is_enabled()) return fn(inputs);
  const uint64_t seed = default_generator().seed(), offset = default_generator().offset();
  std::vector<Tensor> raw;
  {
    NoGradGuard no_grad;
    raw = fn(inputs);
  }
  std::vector<Tensor> outputs;
  for (const Tensor& t : raw) {
    KS_CHECK(t.defined(), "checkpoint: the function returned an undefined tensor");
    outputs.push_back(t.alias(t.sizes(), t.strides(), t.storage_offset()));
  }
  std::vector<SavedTensor> saved(inputs.begin(), inputs.end());
  std::vector<bool> wants;
  for (const Tensor& t : inputs) wants.push_back(t.defined() && t.requires_grad());
  // Recorded even when no input needs a gradient: the parameters inside fn may.
  record("CheckpointBackward", inputs, outputs, [fn, saved, wants, seed, offset](const std::vector<Tensor>& grads) {
    std::vector<Tensor> entries;
    for (size_t i = 0; i < saved.size(); ++i) {
      Tensor x = saved[i].unpack();
      entries.push_back(x.defined() ? detach(x) : x);
      if (wants[i]) entries.back().set_requires_grad(true);
    }
    std::vector<Tensor> again;
    {
      GeneratorReplay replay(seed, offset);
      GradModeGuard record_again(true);
      again = fn(entries);
    }
    KS_CHECK(again.size() == grads.size(), "checkpoint: the recomputation returned ", again.size(),
             " outputs where the forward returned ", grads.size());
    std::vector<Tensor> roots, weights;
    for (size_t k = 0; k < again.size(); ++k)
      if (again[k].requires_grad() && grads[k].defined()) {
        roots.push_back(again[k]);
        weights.push_back(grads[k]);
      }
    if (!roots.empty()) backward(roots, weights);
    std::vector<Tensor> result;
    for (size_t i = 0; i < entries.size(); ++i) result.push_back(wants[i] ? entries[i].grad() : Tensor());
    return result;
  });
  return outputs;
}

}  // namespace ks
