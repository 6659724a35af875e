// autograd/engine.cpp — dependency counting, then a ready queue ordered by
// sequence number (highest first), accumulating gradients per node input.
#include "autograd/engine.h"

#include <queue>
#include <unordered_map>

#include "autograd/grad_accumulate.h"
#include "core/factory.h"
#include "core/profiler.h"

namespace ks {
namespace {

struct LaterFirst {
  bool operator()(const Node* a, const Node* b) const { return a->sequence_nr < b->sequence_nr; }
};

// Sums `g` into slot `k` of a node's input buffer: into the slot's tensor in
// place when the buffer is its only holder, out of place otherwise (either
// may be shared with another branch, a saved tensor or the caller). Both
// compute slot + g element by element, so the bits are the same.
void add_to_buffer(std::vector<Tensor>& buffer, size_t k, Tensor g) {
  if (!g.defined()) return;
  if (!buffer[k].defined())
    buffer[k] = std::move(g);
  else if (unshared_dense(buffer[k]))
    grad_accumulate_(buffer[k], g);  // g holds a handle: never buffer[k] itself
  else
    buffer[k] = grad_sum(buffer[k], g);
}

}  // namespace

void backward(const Tensor& root, const Tensor& grad, bool retain_graph) {
  backward(std::vector<Tensor>{root}, std::vector<Tensor>{grad}, retain_graph);
}

void backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& grads, bool retain_graph) {
  KS_CHECK(roots.size() == grads.size(), "backward: ", roots.size(), " roots but ", grads.size(), " gradients");
  NoGradGuard no_grad;
  profiler::Phase phase("backward");  // kernels below are charged to the backward pass

  std::unordered_map<Node*, std::vector<Tensor>> buffers;
  std::unordered_map<Node*, int> deps;
  std::vector<std::shared_ptr<Node>> root_nodes;

  for (size_t i = 0; i < roots.size(); ++i) {
    const Tensor& r = roots[i];
    KS_CHECK(r.defined() && r.requires_grad(), "backward: root ", i,
             " does not require grad and has no grad_fn (was it computed under NoGradGuard, "
             "or from tensors without requires_grad?)");
    Tensor g = grads[i];
    if (!g.defined()) {
      KS_CHECK(r.numel() == 1, "backward: a gradient can be implied only for a one-element root; root ", i, " is ",
               describe(r), ", so pass its gradient explicitly");
      g = ones(r.sizes(), {.dtype = r.dtype(), .device = r.device()});
    }
    KS_CHECK(g.sizes() == r.sizes() && g.dtype() == r.dtype(), "backward: gradient ", describe(g),
             " does not match root ", describe(r));
    Edge e = gradient_edge(r);
    auto& buf = buffers[e.node.get()];
    buf.resize(e.node->outputs.size());
    add_to_buffer(buf, e.input_nr, g);
    root_nodes.push_back(e.node);
  }

  // Count, for every reachable node, how many edges point at it.
  std::vector<Node*> stack;
  std::unordered_map<Node*, bool> seen;
  for (auto& n : root_nodes)
    if (!seen[n.get()]) {
      seen[n.get()] = true;
      stack.push_back(n.get());
    }
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    for (const Edge& e : n->next_edges) {
      if (!e.valid()) continue;
      ++deps[e.node.get()];
      if (!seen[e.node.get()]) {
        seen[e.node.get()] = true;
        stack.push_back(e.node.get());
      }
    }
  }

  std::priority_queue<Node*, std::vector<Node*>, LaterFirst> ready;
  for (auto& n : root_nodes)
    if (deps[n.get()] == 0 && seen[n.get()]) {
      ready.push(n.get());
      seen[n.get()] = false;
    }

  while (!ready.empty()) {
    Node* node = ready.top();
    ready.pop();
    std::vector<Tensor> grad_out = std::move(buffers[node]);
    buffers.erase(node);
    grad_out.resize(node->outputs.size());

    bool any = false;
    for (const Tensor& g : grad_out) any = any || g.defined();
    std::vector<Tensor> grad_in;
    if (any) {
      for (size_t k = 0; k < grad_out.size(); ++k)
        if (!grad_out[k].defined()) {
          const auto& m = node->outputs[k];
          grad_out[k] = zeros(m.sizes, {.dtype = m.dtype, .device = m.device});
        }
      grad_in = node->apply(std::move(grad_out));
      if (!retain_graph) node->release_saved();
    }
    KS_CHECK(grad_in.empty() || grad_in.size() == node->next_edges.size(), "backward: ", node->name(), " returned ",
             grad_in.size(), " gradients for ", node->next_edges.size(), " inputs");

    for (size_t i = 0; i < node->next_edges.size(); ++i) {
      const Edge& e = node->next_edges[i];
      if (!e.valid()) continue;
      auto& buf = buffers[e.node.get()];
      buf.resize(e.node->outputs.size());
      if (i < grad_in.size() && grad_in[i].defined()) {
        const auto& m = e.node->outputs[e.input_nr];
        KS_CHECK(grad_in[i].sizes() == m.sizes, "backward: ", node->name(), " returned a gradient of shape ",
                 grad_in[i].sizes(), " for input ", i, " of shape ", m.sizes);
        add_to_buffer(buf, e.input_nr, grad_in[i]);
      }
      if (--deps[e.node.get()] == 0) ready.push(e.node.get());
    }
  }
}

}  // namespace ks
