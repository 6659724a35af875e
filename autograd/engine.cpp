// autograd/engine.cpp — dependency counting, then a ready queue ordered by
// sequence number (highest first), accumulating gradients per node input.
// backward() and grad() are one walk: grad() runs only the nodes on a path to
// its inputs, takes their gradients as they complete, and accumulates nothing.
#include "autograd/engine.h"

#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "autograd/anomaly.h"
#include "autograd/grad_accumulate.h"
#include "autograd/hooks.h"
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

// What one walk does: which gradients to hand back (grad()) or none (backward()).
struct Walk {
  std::vector<Edge> captures;  // grad(): where each input's gradient arrives
  GradOptions options;
  bool leaf_hooks = true;  // grad(): run a captured leaf's hooks (not for a walk inside a node's backward)
};

// Under create_graph, the gradients of an op without higher-order support
// get a history that throws when reached, with the op's edges so that a later
// grad() walks into it instead of calling the input unused.
void mark_no_higher_order(Node& node, std::vector<Tensor>& grad_in) {
  for (Tensor& g : grad_in) {
    if (!g.defined()) continue;
    auto stop = std::make_shared<NoHigherOrder>(node.name());
    stop->next_edges = node.next_edges;
    stop->outputs.push_back({g.sizes(), g.dtype(), g.device()});
    g = with_history(g, std::move(stop), 0);
  }
}

// The state of one walk, built phase by phase by run() below.
struct WalkState {
  std::string what;                                        // "backward" or "grad", for errors
  std::unordered_map<Node*, std::vector<Tensor>> buffers;  // gradients waiting per node, one per output
  std::vector<Node*> roots;                                // the roots' nodes, deduplicated
  // Their owners: a leaf root's AccumulateGrad node may have no other
  // (gradient_edge makes it), and must live until the walk ends.
  std::vector<std::shared_ptr<Node>> root_owners;
  std::vector<Node*> reachable;                           // every node below the roots, in discovery order
  std::unordered_map<Node*, std::vector<Node*>> parents;  // grad(): the nodes with an edge to each
  std::unordered_map<Node*, bool> runs;                   // which nodes apply their backward
  std::unordered_map<Node*, int> deps;                    // edges into each node from nodes that run
};

// Phase 1: each root's gradient (implied 1 for a one-element root) into its node's buffer.
void seed_roots(WalkState& w, const std::vector<Tensor>& roots, const std::vector<Tensor>& grads) {
  std::unordered_set<Node*> seen;
  for (size_t i = 0; i < roots.size(); ++i) {
    const Tensor& r = roots[i];
    KS_CHECK(r.defined() && r.requires_grad(), w.what, ": root ", i,
             " does not require grad and has no grad_fn (was it computed under NoGradGuard, "
             "or from tensors without requires_grad?)");
    Tensor g = grads.empty() ? Tensor() : grads[i];
    if (!g.defined()) {
      KS_CHECK(r.numel() == 1, w.what, ": a gradient can be implied only for a one-element root; root ", i, " is ",
               describe(r), ", so pass its gradient explicitly");
      g = ones(r.sizes(), {.dtype = r.dtype(), .device = r.device()});
    }
    KS_CHECK(g.sizes() == r.sizes() && g.dtype() == r.dtype(), w.what, ": gradient ", describe(g),
             " does not match root ", describe(r));
    Edge e = gradient_edge(r);
    auto& buf = w.buffers[e.node.get()];
    buf.resize(e.node->outputs.size());
    add_to_buffer(buf, e.input_nr, g);
    if (seen.insert(e.node.get()).second) w.roots.push_back(e.node.get());
    w.root_owners.push_back(e.node);
  }
}

// Phase 2: every node reachable from the roots, and, for grad(), who feeds each.
void discover(WalkState& w, bool want_parents) {
  std::unordered_set<Node*> seen(w.roots.begin(), w.roots.end());
  w.reachable = w.roots;
  for (size_t i = 0; i < w.reachable.size(); ++i)
    for (const Edge& e : w.reachable[i]->next_edges) {
      if (!e.valid()) continue;
      if (want_parents) w.parents[e.node.get()].push_back(w.reachable[i]);
      if (seen.insert(e.node.get()).second) w.reachable.push_back(e.node.get());
    }
}

// Phase 3: which nodes run: all of them for backward(); for grad(), those
// with a path to a captured input (a node below every capture has nothing to
// give): the ancestors of the captures, found by walking the edges backwards.
void select_nodes(WalkState& w, const std::vector<Edge>& captures) {
  if (captures.empty()) {
    for (Node* n : w.reachable) w.runs[n] = true;
    return;
  }
  std::vector<Node*> frontier;
  for (const Edge& c : captures) frontier.push_back(c.node.get());
  while (!frontier.empty()) {
    Node* n = frontier.back();
    frontier.pop_back();
    for (Node* p : w.parents[n])
      if (!w.runs[p]) {
        w.runs[p] = true;
        frontier.push_back(p);
      }
  }
}

// Phase 4: a node is ready once every node that runs and feeds it has.
void count_dependencies(WalkState& w) {
  for (Node* n : w.reachable)
    if (w.runs[n])
      for (const Edge& e : n->next_edges)
        if (e.valid()) ++w.deps[e.node.get()];
}

// grad(): hands a captured node's incoming gradients to the caller (after a
// captured leaf's own hooks, as AccumulateGrad runs them in backward()).
void capture(const Walk& walk, Node* node, std::vector<Tensor>& grad_out, std::vector<Tensor>& captured) {
  bool is_captured = false;
  for (const Edge& c : walk.captures) is_captured = is_captured || c.node.get() == node;
  auto* leaf = is_captured && walk.leaf_hooks ? dynamic_cast<AccumulateGrad*>(node) : nullptr;
  if (leaf && grad_out[0].defined()) grad_out[0] = run_grad_hooks(leaf->leaf(), std::move(grad_out[0]));
  for (size_t c = 0; c < walk.captures.size(); ++c)
    if (walk.captures[c].node.get() == node) captured[c] = grad_out[walk.captures[c].input_nr];
}

// The node's backward on its incoming gradients (none when no gradient
// arrived): the gradients for its inputs, one per edge or none.
std::vector<Tensor> apply_node(const WalkState& w, Node* node, std::vector<Tensor> grad_out, bool create_graph,
                               bool retain_graph) {
  bool any = false;
  for (const Tensor& g : grad_out) any = any || g.defined();
  std::vector<Tensor> grad_in;
  if (any) {
    for (size_t k = 0; k < grad_out.size() && node->materialize_grads; ++k)
      if (!grad_out[k].defined()) {
        const auto& m = node->outputs[k];
        grad_out[k] = zeros(m.sizes, {.dtype = m.dtype, .device = m.device});
      }
    const bool check = anomaly_mode_enabled();
    std::vector<Tensor> incoming = check ? grad_out : std::vector<Tensor>{};
    {
      CurrentNodeGuard current(node);
      grad_in = node->apply(std::move(grad_out));
    }
    if (check) check_backward(*node, incoming, grad_in);
    if (create_graph && !node->supports_higher_order()) mark_no_higher_order(*node, grad_in);
    if (!retain_graph) node->release_saved();
  }
  KS_CHECK(grad_in.empty() || grad_in.size() == node->next_edges.size(), w.what, ": ", node->name(), " returned ",
           grad_in.size(), " gradients for ", node->next_edges.size(), " inputs");
  return grad_in;
}

// Sums the node's input gradients into the buffers of the nodes its edges
// lead to, and queues each one whose last dependency this was.
template <typename Queue> void pass_on(WalkState& w, Node* node, const std::vector<Tensor>& grad_in, Queue& ready) {
  for (size_t i = 0; i < node->next_edges.size(); ++i) {
    const Edge& e = node->next_edges[i];
    if (!e.valid()) continue;
    auto& buf = w.buffers[e.node.get()];
    buf.resize(e.node->outputs.size());
    if (i < grad_in.size() && grad_in[i].defined()) {
      const auto& m = e.node->outputs[e.input_nr];
      KS_CHECK(grad_in[i].sizes() == m.sizes, w.what, ": ", node->name(), " returned a gradient of shape ",
               grad_in[i].sizes(), " for input ", i, " of shape ", m.sizes);
      add_to_buffer(buf, e.input_nr, grad_in[i]);
    }
    if (--w.deps[e.node.get()] == 0) ready.push(e.node.get());
  }
}

std::vector<Tensor> run(const std::vector<Tensor>& roots, const std::vector<Tensor>& grads, const Walk& walk) {
  WalkState w;
  w.what = walk.captures.empty() ? "backward" : "grad";
  KS_CHECK(grads.empty() || roots.size() == grads.size(), w.what, ": ", roots.size(), " outputs but ", grads.size(),
           " gradients");
  const bool create_graph = walk.options.create_graph;
  const bool retain_graph = walk.options.retain_graph || create_graph;
  GradModeGuard grad_mode(create_graph);
  profiler::Phase phase("backward");  // kernels below are charged to the backward pass

  seed_roots(w, roots, grads);
  discover(w, !walk.captures.empty());
  if (anomaly_mode_enabled()) check_forward(w.reachable);
  select_nodes(w, walk.captures);
  count_dependencies(w);

  // Phase 5: the nodes in order of readiness, the latest-created first.
  std::vector<Tensor> captured(walk.captures.size());
  std::priority_queue<Node*, std::vector<Node*>, LaterFirst> ready;
  for (Node* n : w.roots)
    if (w.deps[n] == 0) ready.push(n);
  while (!ready.empty()) {
    Node* node = ready.top();
    ready.pop();
    std::vector<Tensor> grad_out = std::move(w.buffers[node]);
    w.buffers.erase(node);
    grad_out.resize(node->outputs.size());
    run_grad_hooks(*node, grad_out);
    if (!walk.captures.empty()) capture(walk, node, grad_out, captured);
    if (!w.runs[node]) continue;
    pass_on(w, node, apply_node(w, node, std::move(grad_out), create_graph, retain_graph), ready);
  }
  return captured;
}

}  // namespace

void backward(const Tensor& root, const Tensor& grad, bool retain_graph, bool create_graph) {
  backward(std::vector<Tensor>{root}, std::vector<Tensor>{grad}, retain_graph, create_graph);
}

void backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& grads, bool retain_graph,
              bool create_graph) {
  KS_CHECK(roots.size() == grads.size(), "backward: ", roots.size(), " roots but ", grads.size(), " gradients");
  run(roots, grads, Walk{{}, {.retain_graph = retain_graph, .create_graph = create_graph}});
}

namespace {

std::vector<Tensor> grad_walk(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                              const std::vector<Tensor>& grad_outputs, GradOptions options, bool leaf_hooks) {
  KS_CHECK(!outputs.empty(), "grad: no outputs given");
  KS_CHECK(!inputs.empty(), "grad: no inputs given");
  Walk walk{{}, options, leaf_hooks};
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& x = inputs[i];
    KS_CHECK(x.defined(), "grad: input ", i, " is undefined");
    KS_CHECK(x.requires_grad(), "grad: input ", i, " (", describe(x),
             ") does not require grad, so nothing can be differentiated with respect to it");
    walk.captures.push_back(gradient_edge(x));
  }
  std::vector<Tensor> result = run(outputs, grad_outputs, walk);
  for (size_t i = 0; i < result.size(); ++i) {
    if (result[i].defined()) {
      // A gradient may still alias a buffer another input received; hand out
      // a handle of its own (same storage) so the caller's writes stay theirs.
      if (!options.create_graph) result[i] = detach(result[i]);
      continue;
    }
    KS_CHECK(options.allow_unused, "grad: input ", i, " (", describe(inputs[i]),
             ") was not used to compute the outputs; pass allow_unused = true to get an undefined gradient for it");
  }
  return result;
}

}  // namespace

std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs, GradOptions options) {
  return grad_walk(outputs, inputs, grad_outputs, options, true);
}

std::vector<Tensor> grad_inside_backward(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                                         const std::vector<Tensor>& grad_outputs, GradOptions options) {
  return grad_walk(outputs, inputs, grad_outputs, options, false);
}

Tensor recompute_entry(const Tensor& x) {
  Tensor entry = detach(x);
  record(
      "RecomputeEntry", {x}, {entry}, [](const std::vector<Tensor>& g) { return g; }, HigherOrder::Supported);
  return entry;
}

std::vector<Tensor> grad_by_recompute(const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& forward,
                                      const std::vector<Tensor>& inputs, const std::vector<Tensor>& grad_outputs) {
  GradModeGuard grad_mode(true);
  std::vector<Tensor> entries, wrt;
  std::vector<size_t> wrt_index;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& x = inputs[i];
    if (!x.defined() || !x.requires_grad()) {
      entries.push_back(x);
      continue;
    }
    entries.push_back(recompute_entry(x));
    wrt.push_back(entries.back());
    wrt_index.push_back(i);
  }
  std::vector<Tensor> result(inputs.size());
  if (wrt.empty()) return result;
  std::vector<Tensor> outputs = forward(entries), roots, weights;
  for (size_t k = 0; k < outputs.size(); ++k)
    if (outputs[k].defined() && outputs[k].requires_grad() && k < grad_outputs.size() && grad_outputs[k].defined()) {
      roots.push_back(outputs[k]);
      weights.push_back(grad_outputs[k]);
    }
  if (roots.empty()) return result;
  std::vector<Tensor> grads = grad(roots, wrt, weights, {.create_graph = true, .allow_unused = true});
  for (size_t j = 0; j < wrt.size(); ++j) result[wrt_index[j]] = grads[j];
  return result;
}

}  // namespace ks
