// autograd/node.cpp — graph bookkeeping: record, saved tensors, AccumulateGrad.
#include "autograd/node.h"

#include <atomic>

#include "autograd/anomaly.h"
#include "autograd/grad_accumulate.h"
#include "autograd/hooks.h"
#include "core/copy.h"

namespace ks {
namespace {
std::atomic<uint64_t> g_next_sequence_nr{0};
thread_local bool t_grad_enabled = true;
thread_local Node* t_current_node = nullptr;
}  // namespace

CurrentNodeGuard::CurrentNodeGuard(Node* node) : prev_(t_current_node) { t_current_node = node; }
CurrentNodeGuard::~CurrentNodeGuard() { t_current_node = prev_; }

bool GradMode::is_enabled() { return t_grad_enabled; }
void GradMode::set_enabled(bool enabled) { t_grad_enabled = enabled; }

Node::Node() : sequence_nr(g_next_sequence_nr.fetch_add(1)) {}

std::vector<Tensor> FunctionNode::apply(std::vector<Tensor>&& grad_outputs) {
  KS_CHECK(fn_, "backward: trying to backward through the graph a second time (at ", name_,
           "); its saved tensors were freed after the first backward. Pass retain_graph=true "
           "to the first backward if you need to run it twice");
  return fn_(grad_outputs);
}

std::vector<Tensor> NoHigherOrder::apply(std::vector<Tensor>&&) {
  throw Error(str("backward: ", op_,
                  " does not support higher-order gradients: its gradient was computed by "
                  "kernels, not by differentiable ops, so it cannot be differentiated again (create_graph)"));
}

std::vector<Tensor> AccumulateGrad::apply(std::vector<Tensor>&& grad_outputs) {
  Tensor leaf(leaf_);
  Tensor g = run_grad_hooks(leaf, std::move(grad_outputs.at(0)));
  KS_CHECK(g.sizes() == leaf.sizes(), "backward: gradient ", describe(g), " does not match leaf ", describe(leaf));
  Tensor current = leaf.grad();
  if (GradMode::is_enabled()) {  // create_graph: .grad keeps the gradient's graph
    leaf.set_grad(current.defined() ? grad_sum(current, g) : g);
  } else if (!current.defined()) {
    // Kept as it is when nothing else can see it (grad_accumulate.h): the
    // copy would only cost a pass over every parameter's gradient each step.
    if (unshared_dense(g) && g.dtype() == leaf.dtype() && g.device() == leaf.device()) {
      leaf.set_grad(g);
    } else {
      // A fresh contiguous copy: the incoming tensor may be shared with other
      // branches of the graph, and .grad is later updated in place.
      Tensor fresh = Tensor::empty(leaf.sizes(), leaf.dtype(), leaf.device());
      copy_(fresh, g);
      leaf.set_grad(fresh);
    }
  } else {
    grad_accumulate_(current, g);
  }
  if (!leaf_->post_accumulate_hooks.empty()) run_post_accumulate_grad_hooks(leaf);
  return {};
}

SavedTensor::SavedTensor(const Tensor& t) {
  if (!t.defined()) return;
  data_ = t.alias(t.sizes(), t.strides(), t.storage_offset());
  saved_version_ = t.version();
  if (t.grad_fn()) {
    grad_fn_ = t.grad_fn();
    output_nr_ = t.impl()->output_nr;
  } else if (t.requires_grad()) {
    leaf_ = t.impl_ptr();
  } else {
    id_ = t.impl();
  }
}

Tensor SavedTensor::unpack() const {
  if (!data_.defined()) return data_;
  KS_CHECK(data_.version() == saved_version_, "backward: a tensor needed for gradient computation (", describe(data_),
           ") was modified by an in-place operation: it is at version ", data_.version(), "; expected version ",
           saved_version_, ". Use an out-of-place op, or clone the tensor before changing it");
  if (!GradMode::is_enabled()) return data_;
  if (leaf_) return Tensor(leaf_);
  if (grad_fn_) return with_history(data_, grad_fn_, output_nr_);
  if (t_current_node) {
    for (const auto& [id, k] : t_current_node->output_ids)
      if (id == id_) return with_history(data_, t_current_node->shared_from_this(), k);
  }
  return data_;
}

Tensor with_history(const Tensor& t, std::shared_ptr<Node> grad_fn, uint32_t output_nr) {
  Tensor out = t.alias(t.sizes(), t.strides(), t.storage_offset());
  out.impl()->grad_fn = std::move(grad_fn);
  out.impl()->output_nr = output_nr;
  return out;
}

bool needs_grad(const std::vector<Tensor>& inputs) {
  if (!GradMode::is_enabled()) return false;
  for (const Tensor& t : inputs)
    if (t.defined() && t.requires_grad()) return true;
  return false;
}

Edge gradient_edge(const Tensor& t) {
  if (!t.defined() || !t.requires_grad()) return {};
  if (t.grad_fn()) return {t.grad_fn(), t.impl()->output_nr};
  TensorImpl* impl = t.impl();
  std::shared_ptr<Node> acc = impl->grad_accumulator.lock();
  if (!acc) {
    acc = std::make_shared<AccumulateGrad>(t.impl_ptr());
    acc->outputs.push_back({t.sizes(), t.dtype(), t.device()});
    impl->grad_accumulator = acc;
  }
  return {acc, 0};
}

std::shared_ptr<FunctionNode> record(std::string name, const std::vector<Tensor>& inputs,
                                     const std::vector<Tensor>& outputs, BackwardFn backward,
                                     HigherOrder higher_order) {
  auto node = std::make_shared<FunctionNode>(std::move(name), std::move(backward), higher_order);
  node->next_edges.reserve(inputs.size());
  for (const Tensor& t : inputs) node->next_edges.push_back(gradient_edge(t));
  for (size_t k = 0; k < outputs.size(); ++k) {
    const Tensor& out = outputs[k];
    KS_ASSERT(out.is_leaf() && !out.impl()->requires_grad);
    node->outputs.push_back({out.sizes(), out.dtype(), out.device()});
    node->output_ids.emplace_back(out.impl(), uint32_t(k));
    out.impl()->grad_fn = node;
    out.impl()->output_nr = uint32_t(k);
  }
  if (anomaly_mode_enabled()) note_forward(*node, inputs, outputs);
  return node;
}

Tensor detach(const Tensor& t) { return t.alias(t.sizes(), t.strides(), t.storage_offset()); }

}  // namespace ks
