// autograd/node.h — the pieces of the backward graph.
//
// Running forward with grad mode on builds a graph of Nodes: each op that
// produced a tensor needing grad leaves a Node holding what its derivative
// needs (saved tensors, in its closure) and one Edge per input pointing at the
// Node that produced that input. Leaves that require grad end in an
// AccumulateGrad node, which adds the incoming gradient into `.grad`.
//
//   y = (a * b).sum()        a, b leaves with requires_grad
//   SumBackward --edge 0--> MulBackward --edge 0--> AccumulateGrad(a)
//                                       \-edge 1--> AccumulateGrad(b)
//
// This file holds the graph data structures and the "record" helper that ops
// call; the walk over the graph is in engine.h.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "autograd/grad_mode.h"
#include "core/tensor.h"

namespace ks {

struct Edge {
  std::shared_ptr<Node> node;  // null: this input needs no gradient
  uint32_t input_nr = 0;       // which output of `node` the gradient belongs to
  bool valid() const { return node != nullptr; }
};

class Node {
 public:
  struct OutputMeta {  // enough to materialise a zero gradient for an unused output
    Shape sizes;
    DType dtype;
    Device device;
  };

  Node();
  virtual ~Node() = default;
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  // Given dL/d(output k) for every output k (never undefined: the engine
  // fills unused outputs with zeros), returns dL/d(input i) for every edge i
  // (undefined where an input needs no gradient).
  virtual std::vector<Tensor> apply(std::vector<Tensor>&& grad_outputs) = 0;
  virtual std::string name() const = 0;
  // Drops saved tensors after backward (unless retain_graph).
  virtual void release_saved() {}

  std::vector<Edge> next_edges;
  std::vector<OutputMeta> outputs;
  const uint64_t sequence_nr;  // creation order: later nodes run first
};

// The backward of an op as a closure: grad_outputs -> grad_inputs.
using BackwardFn = std::function<std::vector<Tensor>(const std::vector<Tensor>& grad_outputs)>;

// The node made by every built-in op and by ks::Function: it owns the
// closure, so releasing the closure frees whatever it saved.
class FunctionNode final : public Node {
 public:
  FunctionNode(std::string name, BackwardFn fn) : name_(std::move(name)), fn_(std::move(fn)) {}
  std::vector<Tensor> apply(std::vector<Tensor>&& grad_outputs) override;
  std::string name() const override { return name_; }
  void release_saved() override { fn_ = nullptr; }

 private:
  std::string name_;
  BackwardFn fn_;
};

// Adds incoming gradients into a leaf's .grad.
class AccumulateGrad final : public Node {
 public:
  explicit AccumulateGrad(std::shared_ptr<TensorImpl> leaf) : leaf_(std::move(leaf)) {}
  std::vector<Tensor> apply(std::vector<Tensor>&& grad_outputs) override;
  std::string name() const override { return "AccumulateGrad"; }

 private:
  std::shared_ptr<TensorImpl> leaf_;
};

// A tensor's value frozen for backward. Unpacking checks that nobody wrote to
// the tensor (or any view of its storage) since it was saved.
class SavedTensor {
 public:
  SavedTensor() = default;
  explicit SavedTensor(const Tensor& t);
  Tensor unpack() const;
  bool defined() const { return data_.defined(); }

 private:
  Tensor data_;  // a detached alias: same storage and version counter, no history
  uint64_t saved_version_ = 0;
};

// True if grad mode is on and any defined tensor requires grad.
bool needs_grad(const std::vector<Tensor>& inputs);

// Where a gradient for `t` must go: its grad_fn, its leaf accumulator, or nowhere.
Edge gradient_edge(const Tensor& t);

// Connects op outputs to a new FunctionNode running `backward`, with one edge
// per input. Call only when needs_grad(inputs). Outputs must be fresh tensors
// made by the op (not aliases of inputs' TensorImpls).
void record(std::string name, const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs,
            BackwardFn backward);

// A new leaf sharing t's storage (and version counter), with no history.
Tensor detach(const Tensor& t);

}  // namespace ks
