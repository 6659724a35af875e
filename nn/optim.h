// nn/optim.h — optimizers: SGD (momentum, Nesterov, weight decay), Adam and
// AdamW, with parameter groups, gradient clipping by global norm, and state
// that can be saved and restored.
//
//   auto groups = nn::decay_groups(model, 0.01);  // no decay on biases/norms
//   nn::AdamW opt(groups, {.lr = 3e-4});
//   ... backward(loss); nn::clip_grad_norm(model.parameters(), 1.0); opt.step(); opt.zero_grad();
//
// Each update is one fused kernel per parameter (ops/optim.h) and follows
// torch.optim's formulas. Parameters without a gradient are skipped, and,
// as torch.optim's per-parameter state['step'], each parameter counts its
// own updates: Adam's bias correction for a parameter that skipped steps
// uses the updates it had, not the optimizer's step() calls.
// Not here: learning-rate schedules (nn/lr_schedule.h).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "nn/module.h"

namespace ks::nn {

struct ParamGroup {
  std::vector<Tensor> params;
  double lr = -1;            // < 0: the optimizer's default
  double weight_decay = -1;  // < 0: the optimizer's default
};

// Two groups of model's parameters: weights with >= 2 dims get
// `weight_decay`; biases, norm scales and other 1-d parameters get none (the
// usual Transformer recipe), nor do those a module names in its
// Module::no_weight_decay (MGK's mixture logits, sMGK's shifts). Frozen
// parameters (requires_grad off: train.freeze, LoRA's base) are in neither.
std::vector<ParamGroup> decay_groups(const Module& model, double weight_decay);

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  // One update of every parameter that has a gradient.
  void step();
  // Drops every parameter's .grad.
  void zero_grad();
  // Sets the learning rate of every group to base_lr(group) * factor (for schedules).
  void set_lr_factor(double factor);
  double lr(size_t group = 0) const { return groups_.at(group).lr; }
  int64_t steps_taken() const { return steps_; }
  // How many updates parameter `index` of `group` has had (0: none yet).
  int64_t param_steps(size_t group, size_t index) const { return param_steps_.at(group).at(index); }
  const std::vector<ParamGroup>& param_groups() const { return groups_; }

  // Per-parameter state as named tensors ("<group>.<index>.<slot>", and the
  // parameter's own update count as "<group>.<index>.step", int64 (1)) plus
  // the step() count under "step"; restores exactly, so a resumed run
  // continues the same sequence of updates. A state saved before parameters
  // counted their own updates (no "<group>.<index>.step") gives each
  // parameter that has state the optimizer's count, the one its updates
  // used then.
  NamedTensors state_dict() const;
  void load_state_dict(const NamedTensors& state);
  // The per-parameter state slots, in the order of update()'s `state`
  // ("exp_avg", "exp_avg_sq" for Adam).
  const std::vector<std::string>& slot_names() const { return slots_; }
  // The dtype of parameter p's state slots: p's own (as PyTorch's
  // zeros_like), or the one an optimizer set (Adam's state_dtype).
  DType state_dtype(const Tensor& p) const {
    return state_dtype_ && p.dtype() == DType::Float32 ? *state_dtype_ : p.dtype();
  }

  // ZeRO-1 (nn/zero.h): owned[group][index] marks the parameters this
  // optimizer updates and keeps state for; step() skips the others, whose
  // owners on other ranks update them. Empty (the default): all.
  void set_owned(std::vector<std::vector<bool>> owned);
  bool owns(size_t group, size_t index) const { return owned_.empty() || owned_[group][index]; }

 protected:
  Optimizer(std::vector<ParamGroup> groups, double lr, double weight_decay, std::vector<std::string> slots);
  // Updates one parameter; `state` holds its slots in the order given to the
  // constructor; `step` is this update's number for this parameter (1: its first).
  virtual void update(const Tensor& p, const Tensor& grad, std::vector<Tensor>& state, const ParamGroup& group,
                      int64_t step) = 0;
  // State slots in `dtype` for float32 parameters (set by a constructor).
  void set_float32_state_dtype(DType dtype) { state_dtype_ = dtype; }
  // During update(): which parameter it is, (group << 32) | index, the same
  // after a resume (a seed for what an update draws, as Adam's rounding).
  uint64_t param_key() const { return param_key_; }

 private:
  std::vector<ParamGroup> groups_;
  std::vector<double> base_lr_;
  std::vector<std::string> slots_;
  std::vector<std::vector<std::vector<Tensor>>> state_;  // [group][param][slot]; empty until first used
  std::vector<std::vector<bool>> owned_;                 // set_owned; empty: every parameter
  std::vector<std::vector<int64_t>> param_steps_;        // [group][param]: its updates so far
  int64_t steps_ = 0;
  std::optional<DType> state_dtype_;  // float32 parameters' state dtype; none: the parameter's
  uint64_t param_key_ = 0;
};

struct SGDOptions {
  double lr = 0.01;
  double momentum = 0;
  double dampening = 0;
  double weight_decay = 0;
  bool nesterov = false;
};

class SGD final : public Optimizer {
 public:
  SGD(std::vector<ParamGroup> groups, SGDOptions opts);
  SGD(const std::vector<Tensor>& params, SGDOptions opts) : SGD(std::vector<ParamGroup>{{params}}, opts) {}

 private:
  void update(const Tensor& p, const Tensor& grad, std::vector<Tensor>& state, const ParamGroup& group,
              int64_t step) override;
  SGDOptions opts_;
};

struct AdamOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0;  // Adam: L2 added to the gradient; AdamW: decoupled (default 0.01 there)
  // The moments' dtype for float32 parameters: float32 (as PyTorch), or
  // bfloat16 (half the bytes; rounded stochastically, ops/optim.h).
  DType state_dtype = DType::Float32;
};

class Adam : public Optimizer {
 public:
  Adam(std::vector<ParamGroup> groups, AdamOptions opts) : Adam(std::move(groups), opts, false) {}
  Adam(const std::vector<Tensor>& params, AdamOptions opts) : Adam(std::vector<ParamGroup>{{params}}, opts) {}

 protected:
  Adam(std::vector<ParamGroup> groups, AdamOptions opts, bool decoupled);

 private:
  void update(const Tensor& p, const Tensor& grad, std::vector<Tensor>& state, const ParamGroup& group,
              int64_t step) override;
  AdamOptions opts_;
  bool decoupled_;
};

class AdamW final : public Adam {
 public:
  AdamW(std::vector<ParamGroup> groups, AdamOptions opts) : Adam(std::move(groups), opts, true) {}
  AdamW(const std::vector<Tensor>& params, AdamOptions opts) : AdamW(std::vector<ParamGroup>{{params}}, opts) {}
};

// Multiplies every defined gradient of `params` by `factor` in place (a
// strided one made contiguous first): what clipping and unscaling a scaled
// loss's gradients (nn/loss_scaler.h) both do.
void scale_gradients(const std::vector<Tensor>& params, double factor);

// Scales all gradients so their joint L2 norm is at most max_norm; returns
// the norm before clipping (inf/nan norms are returned and nothing is scaled).
double clip_grad_norm(const std::vector<Tensor>& params, double max_norm);

}  // namespace ks::nn
