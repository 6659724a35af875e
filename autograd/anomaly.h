// autograd/anomaly.h — anomaly mode: finding the op where a NaN or Inf was
// born, as torch.autograd.detect_anomaly does.
//
//   { ks::DetectAnomalyGuard anomaly;       // or "train": {"detect_anomaly": true}
//     Tensor loss = model.loss(batch);
//     ks::backward(loss); }                 // throws ks::Error naming the op
//
// While it is on, every recorded op notes where it ran (the NameScope stack,
// e.g. "layers.1.attention") and whether its forward made a NaN from NaN-free
// inputs; backward then throws, before computing anything, naming the first
// such op of its graph, and otherwise checks every gradient a node returns,
// throwing at the first node that makes a NaN or Inf from finite incoming
// gradients. Infinities in forward are not flagged: masks write -inf on purpose.
// The checks read every value (copying from the GPU): a debugging mode, off
// by default and free when off. Not here: checks of parameters or optimizer
// state (the trainer reports non-finite gradient norms itself).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/tensor.h"

namespace ks {

class Node;

// Turns anomaly mode on for this thread for a scope.
class DetectAnomalyGuard {
 public:
  DetectAnomalyGuard();
  ~DetectAnomalyGuard();
  DetectAnomalyGuard(const DetectAnomalyGuard&) = delete;
  DetectAnomalyGuard& operator=(const DetectAnomalyGuard&) = delete;

 private:
  bool prev_;
};

bool anomaly_mode_enabled();

// Names the part of a model that runs in a scope, for anomaly mode's messages:
// nested scopes join with '.' ("decoder" > "layers", 0 > "self_attn" gives
// "decoder.layers.0.self_attn"). Costs nothing while anomaly mode is off.
class NameScope {
 public:
  explicit NameScope(std::string_view name, int64_t index = -1);
  ~NameScope();
  NameScope(const NameScope&) = delete;
  NameScope& operator=(const NameScope&) = delete;

 private:
  bool pushed_ = false;
};

// The joined NameScope stack of this thread ("" at the top level).
std::string current_name_scope();

// record()'s part: where `node` ran, and whether its forward made a NaN.
void note_forward(Node& node, const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs);

// The engine's part, before running: throws if a forward in `graph` made a NaN.
void check_forward(const std::vector<Node*>& graph);

// The engine's part, after node.apply: throws if it made a NaN/Inf from finite gradients.
void check_backward(const Node& node, const std::vector<Tensor>& incoming, const std::vector<Tensor>& outgoing);

}  // namespace ks
