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
//
// Higher order: when backward runs with create_graph (engine.h), grad mode is
// on inside the backward closures, so a closure written in differentiable ops
// records a graph of its own, and SavedTensor::unpack returns the saved value
// with its history. An op declares that its closure is such
// (HigherOrder::Supported); the gradients of any other op get a node that
// throws, naming the op, if they are ever differentiated.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "autograd/grad_mode.h"
#include "core/tensor.h"

namespace ks {

struct Edge {
  std::shared_ptr<Node> node;  // null: this input needs no gradient
  uint32_t input_nr = 0;       // which output of `node` the gradient belongs to
  bool valid() const { return node != nullptr; }
};

class Node : public std::enable_shared_from_this<Node> {
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

  // Whether apply, run with grad mode on, returns gradients that carry their
  // own graph (so they can be differentiated again).
  virtual bool supports_higher_order() const { return false; }

  std::vector<Edge> next_edges;
  std::vector<OutputMeta> outputs;
  // The TensorImpls this node's outputs were made as, by address only: how a
  // saved output finds its history when unpacked during this node's backward.
  std::vector<std::pair<const TensorImpl*, uint32_t>> output_ids;
  // Whether an output that got no gradient reaches apply as zeros (built-in
  // ops) or undefined (ks::Function, which documents it so).
  bool materialize_grads = true;
  // Hooks on the gradient of output k (Tensor::register_hook on a non-leaf):
  // (output_nr, id, fn), run in registration order before apply.
  std::vector<std::tuple<uint32_t, uint64_t, std::function<Tensor(const Tensor&)>>> grad_hooks;
  // Non-leaf tensors whose gradient (of output k) is kept in their .grad (retain_grad).
  std::vector<std::pair<uint32_t, std::weak_ptr<TensorImpl>>> retained;
  // Under anomaly mode (anomaly.h): where the forward op ran, and what it saw.
  std::string created_in;         // module scope, e.g. "layers.1.attention"; empty outside anomaly mode
  std::string forward_nonfinite;  // non-empty: the forward made NaN/Inf from finite inputs
  const uint64_t sequence_nr;     // creation order: later nodes run first
};

// The backward of an op as a closure: grad_outputs -> grad_inputs.
using BackwardFn = std::function<std::vector<Tensor>(const std::vector<Tensor>& grad_outputs)>;

// The node made by every built-in op and by ks::Function: it owns the
// closure, so releasing the closure frees whatever it saved.
// Whether an op's backward closure is written in differentiable ops.
enum class HigherOrder { Unsupported, Supported };

class FunctionNode final : public Node {
 public:
  FunctionNode(std::string name, BackwardFn fn, HigherOrder higher_order)
      : name_(std::move(name)), fn_(std::move(fn)), higher_order_(higher_order) {}
  std::vector<Tensor> apply(std::vector<Tensor>&& grad_outputs) override;
  std::string name() const override { return name_; }
  void release_saved() override { fn_ = nullptr; }
  bool supports_higher_order() const override { return higher_order_ == HigherOrder::Supported; }

 private:
  std::string name_;
  BackwardFn fn_;
  HigherOrder higher_order_;
};

// The history of a gradient computed by an op without higher-order support
// under create_graph: differentiating through it throws, naming the op.
class NoHigherOrder final : public Node {
 public:
  explicit NoHigherOrder(std::string op) : op_(std::move(op)) {}
  std::vector<Tensor> apply(std::vector<Tensor>&& grad_outputs) override;
  std::string name() const override { return "NoHigherOrder(" + op_ + ")"; }

 private:
  std::string op_;
};

// Adds incoming gradients into a leaf's .grad (out of place, keeping their
// graph, when backward runs with create_graph), after the leaf's gradient hooks.
class AccumulateGrad final : public Node {
 public:
  explicit AccumulateGrad(std::shared_ptr<TensorImpl> leaf) : leaf_(std::move(leaf)) {}
  std::vector<Tensor> apply(std::vector<Tensor>&& grad_outputs) override;
  std::string name() const override { return "AccumulateGrad"; }
  Tensor leaf() const { return Tensor(leaf_); }

 private:
  std::shared_ptr<TensorImpl> leaf_;
};

// A tensor's value frozen for backward. Unpacking checks that nobody wrote to
// the tensor (or any view of its storage) since it was saved. With grad mode
// off (a plain backward) it unpacks without history; with grad mode on (a
// backward with create_graph) it unpacks with the history the tensor had: its
// producer, its leaf, or — for an output of the op being differentiated,
// which has no producer yet when saved — the node running now. Holding the
// producer of an input is no extra lifetime (the node's edges hold it too);
// an output is remembered by address only, so saving one makes no cycle.
class SavedTensor {
 public:
  SavedTensor() = default;
  explicit SavedTensor(const Tensor& t);
  Tensor unpack() const;
  bool defined() const { return data_.defined(); }

 private:
  Tensor data_;  // a detached alias: same storage and version counter, no history
  uint64_t saved_version_ = 0;
  std::shared_ptr<Node> grad_fn_;  // the producer, for a tensor that had one
  uint32_t output_nr_ = 0;
  std::shared_ptr<TensorImpl> leaf_;  // the tensor itself, for a leaf that requires grad
  const TensorImpl* id_ = nullptr;    // for an output of the op that saves it
};

// The node whose backward is running on this thread (set by the engine), so
// SavedTensor can give an op's saved output the history of that node.
class CurrentNodeGuard {
 public:
  explicit CurrentNodeGuard(Node* node);
  ~CurrentNodeGuard();
  CurrentNodeGuard(const CurrentNodeGuard&) = delete;
  CurrentNodeGuard& operator=(const CurrentNodeGuard&) = delete;

 private:
  Node* prev_;
};

// True if grad mode is on and any defined tensor requires grad.
bool needs_grad(const std::vector<Tensor>& inputs);

// Where a gradient for `t` must go: its grad_fn, its leaf accumulator, or nowhere.
Edge gradient_edge(const Tensor& t);

// Connects op outputs to a new FunctionNode running `backward`, with one edge
// per input. Call only when needs_grad(inputs). Outputs must be fresh tensors
// made by the op (not aliases of inputs' TensorImpls). Pass
// HigherOrder::Supported only when `backward` is written in differentiable
// ops and unpacks what it saved (so a create_graph backward records through it).
// Returns the node (for Function's extras: names, non-differentiable outputs).
std::shared_ptr<FunctionNode> record(std::string name, const std::vector<Tensor>& inputs,
                                     const std::vector<Tensor>& outputs, BackwardFn backward,
                                     HigherOrder higher_order = HigherOrder::Unsupported);

// A tensor with `t`'s value and the history (grad_fn, output_nr) given: what
// the engine hands out for a gradient whose graph is made by hand.
Tensor with_history(const Tensor& t, std::shared_ptr<Node> grad_fn, uint32_t output_nr);

// A new leaf sharing t's storage (and version counter), with no history.
Tensor detach(const Tensor& t);

}  // namespace ks
