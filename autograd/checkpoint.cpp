// autograd/checkpoint.cpp — the checkpoint node: a forward whose graph is
// kept only long enough to learn which leaves it reads, and a backward that
// recomputes with the saved generator state and differentiates that.
#include "autograd/checkpoint.h"

#include <unordered_set>

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

// The leaves `outputs` were computed from that need a gradient — fn's
// parameters, and any other tensor it captured — found by walking their graph.
std::vector<Tensor> leaves_of(const std::vector<Tensor>& outputs) {
  std::vector<Tensor> leaves;
  std::vector<Node*> pending;
  std::unordered_set<Node*> seen;
  for (const Tensor& t : outputs)
    if (t.defined() && t.grad_fn() && seen.insert(t.grad_fn().get()).second) pending.push_back(t.grad_fn().get());
  while (!pending.empty()) {
    Node* node = pending.back();
    pending.pop_back();
    if (auto* accumulate = dynamic_cast<AccumulateGrad*>(node)) leaves.push_back(accumulate->leaf());
    for (const Edge& e : node->next_edges)
      if (e.valid() && seen.insert(e.node.get()).second) pending.push_back(e.node.get());
  }
  return leaves;
}

}  // namespace

std::vector<Tensor> checkpoint(const CheckpointFn& fn, const std::vector<Tensor>& inputs) {
  KS_CHECK(fn != nullptr, "checkpoint: empty function");
  if (!GradMode::is_enabled()) return fn(inputs);
  const uint64_t seed = default_generator().seed(), offset = default_generator().offset();
  // The forward records a graph of its own, from the inputs' values alone,
  // only to learn which leaves fn reads; it is dropped (with the
  // activations it holds) when this scope ends, so memory peaks at one
  // call's activations, as the recomputation in backward does.
  std::vector<Tensor> outputs, leaves;
  {
    std::vector<Tensor> values;
    for (const Tensor& t : inputs) values.push_back(t.defined() ? detach(t) : t);
    const std::vector<Tensor> raw = fn(values);
    leaves = leaves_of(raw);
    for (const Tensor& t : raw) {
      KS_CHECK(t.defined(), "checkpoint: the function returned an undefined tensor");
      outputs.push_back(detach(t));
    }
  }
  std::vector<Tensor> edges = inputs;
  edges.insert(edges.end(), leaves.begin(), leaves.end());
  if (!needs_grad(edges)) return outputs;
  std::vector<SavedTensor> saved(inputs.begin(), inputs.end());
  std::vector<bool> wants;
  for (const Tensor& t : inputs) wants.push_back(t.defined() && t.requires_grad());
  record(
      "CheckpointBackward", edges, outputs,
      [fn, saved, wants, leaves, seed, offset](const std::vector<Tensor>& grads) {
        // Grad mode is on here only in a create_graph backward; the
        // gradients are then differentiable, through the recomputation.
        const bool create_graph = GradMode::is_enabled();
        GradModeGuard record_again(true);
        std::vector<Tensor> entries, wrt;
        for (size_t i = 0; i < saved.size(); ++i) {
          Tensor x = saved[i].unpack();
          if (!wants[i]) {
            entries.push_back(x.defined() ? detach(x) : x);
            continue;
          }
          if (create_graph) {
            entries.push_back(recompute_entry(x));
          } else {
            entries.push_back(detach(x));
            entries.back().set_requires_grad(true);
          }
          wrt.push_back(entries.back());
        }
        std::vector<Tensor> again;
        {
          GeneratorReplay replay(seed, offset);
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
        wrt.insert(wrt.end(), leaves.begin(), leaves.end());
        std::vector<Tensor> found(wrt.size());
        if (!roots.empty() && !wrt.empty())
          found = grad_inside_backward(roots, wrt, weights, {.create_graph = create_graph, .allow_unused = true});
        // One gradient per edge: the inputs' (undefined where none is
        // wanted), then the leaves'.
        std::vector<Tensor> result;
        size_t next = 0;
        for (bool w : wants) result.push_back(w ? found[next++] : Tensor());
        result.insert(result.end(), found.begin() + ptrdiff_t(next), found.end());
        return result;
      },
      HigherOrder::Supported);
  return outputs;
}

}  // namespace ks
