// nn/optim.cpp — the optimizer loop, state bookkeeping and clipping; the
// arithmetic is in the fused kernels of ops/optim.h.
#include "nn/optim.h"

#include <cmath>
#include <map>
#include <set>

#include "autograd/grad_mode.h"
#include "core/copy.h"
#include "core/factory.h"
#include "ops/optim.h"

namespace ks::nn {

namespace {

// The dotted names of the parameters that the modules of the tree under `m` exempt from decay.
void collect_no_decay(const Module& m, const std::string& prefix, std::set<std::string>& out) {
  for (const std::string& name : m.no_weight_decay()) out.insert(prefix + name);
  for (const auto& [name, child] : m.named_children()) collect_no_decay(*child, prefix + name + ".", out);
}

}  // namespace

std::vector<ParamGroup> decay_groups(const Module& model, double weight_decay) {
  ParamGroup decay, no_decay;
  decay.weight_decay = weight_decay;
  no_decay.weight_decay = 0;
  std::set<std::string> exempt;
  collect_no_decay(model, "", exempt);
  for (const auto& [name, p] : model.named_parameters())
    if (p.requires_grad())  // a frozen parameter (nn/lora.h) is no optimizer's: no group, no state
      (p.dim() >= 2 && !exempt.count(name) ? decay : no_decay).params.push_back(p);
  std::vector<ParamGroup> out;
  if (!decay.params.empty()) out.push_back(decay);
  if (!no_decay.params.empty()) out.push_back(no_decay);
  return out;
}

Optimizer::Optimizer(std::vector<ParamGroup> groups, double lr, double weight_decay, std::vector<std::string> slots)
    : groups_(std::move(groups)), slots_(std::move(slots)) {
  KS_CHECK(!groups_.empty(), "optimizer: no parameter groups (is every parameter frozen?)");
  for (ParamGroup& g : groups_) {
    if (g.lr < 0) g.lr = lr;
    if (g.weight_decay < 0) g.weight_decay = weight_decay;
    KS_CHECK(g.lr >= 0 && std::isfinite(g.lr), "optimizer: learning rate must be finite and >= 0, got ", g.lr);
    for (const Tensor& p : g.params)
      // A frozen leaf (requires_grad off; nn/lora.h) is accepted, as PyTorch accepts it: it never
      // has a gradient, so step() never makes state for it. nn::decay_groups leaves those out anyway.
      KS_CHECK(p.defined() && p.is_leaf(), "optimizer: every parameter must be a leaf tensor (not made by an op)");
    base_lr_.push_back(g.lr);
    state_.emplace_back(g.params.size());
    param_steps_.emplace_back(g.params.size(), 0);
  }
}

void Optimizer::step() {
  NoGradGuard no_grad;
  ++steps_;
  for (size_t gi = 0; gi < groups_.size(); ++gi) {
    const ParamGroup& group = groups_[gi];
    for (size_t pi = 0; pi < group.params.size(); ++pi) {
      const Tensor& p = group.params[pi];
      Tensor grad = p.grad();
      if (!grad.defined() || !owns(gi, pi)) continue;
      std::vector<Tensor>& state = state_[gi][pi];
      if (state.empty())
        for (size_t s = 0; s < slots_.size(); ++s)
          state.push_back(zeros(p.sizes(), {.dtype = state_dtype(p), .device = p.device()}));
      // The model was moved (Module::to) after earlier steps: the state follows its parameter.
      for (Tensor& slot : state)
        if (slot.device() != p.device()) slot = to_raw(slot, p.device(), slot.dtype());
      param_key_ = (uint64_t(gi) << 32) | uint64_t(pi);
      update(p, grad.is_contiguous() ? grad : contiguous_raw(grad), state, group, ++param_steps_[gi][pi]);
    }
  }
}

void Optimizer::set_owned(std::vector<std::vector<bool>> owned) {
  if (!owned.empty()) {
    KS_CHECK(owned.size() == groups_.size(), "optimizer set_owned: ", owned.size(), " groups for ", groups_.size());
    for (size_t gi = 0; gi < groups_.size(); ++gi)
      KS_CHECK(owned[gi].size() == groups_[gi].params.size(), "optimizer set_owned: group ", gi, " has ",
               groups_[gi].params.size(), " parameters, got ", owned[gi].size(), " marks");
    // State of parameters given away is dropped (their owners hold it).
    for (size_t gi = 0; gi < groups_.size(); ++gi)
      for (size_t pi = 0; pi < groups_[gi].params.size(); ++pi)
        if (!owned[gi][pi]) {
          state_[gi][pi].clear();
          param_steps_[gi][pi] = 0;
        }
  }
  owned_ = std::move(owned);
}

void Optimizer::zero_grad() {
  for (ParamGroup& g : groups_)
    for (Tensor& p : g.params) p.set_grad(Tensor());
}

void Optimizer::set_lr_factor(double factor) {
  for (size_t i = 0; i < groups_.size(); ++i) groups_[i].lr = base_lr_[i] * factor;
}

NamedTensors Optimizer::state_dict() const {
  NamedTensors out;
  out.emplace_back("step", from_vector(std::vector<int64_t>{steps_}));
  for (size_t gi = 0; gi < groups_.size(); ++gi)
    for (size_t pi = 0; pi < state_[gi].size(); ++pi) {
      for (size_t s = 0; s < state_[gi][pi].size(); ++s)
        out.emplace_back(str(gi, ".", pi, ".", slots_[s]), state_[gi][pi][s]);
      if (param_steps_[gi][pi] > 0)
        out.emplace_back(str(gi, ".", pi, ".step"), from_vector(std::vector<int64_t>{param_steps_[gi][pi]}));
    }
  return out;
}

void Optimizer::load_state_dict(const NamedTensors& state) {
  std::map<std::string, Tensor> given(state.begin(), state.end());
  auto step = given.find("step");
  KS_CHECK(step != given.end() && step->second.numel() == 1, "optimizer load_state_dict: missing 'step'");
  const double steps = step->second.item<double>();
  KS_CHECK(steps >= 0 && steps <= 9.0e15 && steps == std::floor(steps),
           "optimizer load_state_dict: 'step' must be a whole number >= 0, got ", steps);
  std::vector<std::vector<std::vector<Tensor>>> loaded(groups_.size());
  std::vector<std::vector<int64_t>> loaded_steps(groups_.size());
  size_t used = 1;
  for (size_t gi = 0; gi < groups_.size(); ++gi) {
    loaded[gi].resize(groups_[gi].params.size());
    for (size_t pi = 0; pi < groups_[gi].params.size(); ++pi) {
      const Tensor& p = groups_[gi].params[pi];
      std::vector<Tensor> slots;
      for (const std::string& s : slots_) {
        auto it = given.find(str(gi, ".", pi, ".", s));
        if (it == given.end()) break;
        KS_CHECK(it->second.sizes() == p.sizes(), "optimizer load_state_dict: '", it->first, "' has shape ",
                 it->second.sizes(), " but its parameter has ", p.sizes());
        if (state_dtype(p) == p.dtype())
          KS_CHECK(it->second.dtype() == p.dtype(), "optimizer load_state_dict: '", it->first, "' is ",
                   name(it->second.dtype()), " but its parameter is ", name(p.dtype()));
        else
          KS_CHECK(it->second.dtype() == state_dtype(p), "optimizer load_state_dict: '", it->first, "' is ",
                   name(it->second.dtype()), " but this optimizer keeps its state in ", name(state_dtype(p)),
                   " (optimizer.state_dtype; the checkpoint was saved with another)");
        Tensor slot = Tensor::empty(p.sizes(), state_dtype(p), p.device());  // own copy, never shared
        copy_(slot, it->second);
        slots.push_back(slot);
        ++used;
      }
      KS_CHECK(slots.empty() || slots.size() == slots_.size(), "optimizer load_state_dict: parameter ", gi, ".", pi,
               " has only some of its state slots");
      // Its own update count; a state saved before there was one: the optimizer's, where it has slots.
      int64_t own = slots.empty() ? 0 : int64_t(steps);
      if (auto it = given.find(str(gi, ".", pi, ".step")); it != given.end()) {
        const double v = it->second.numel() == 1 ? it->second.item<double>() : -1;
        KS_CHECK(v >= 1 && v <= steps && v == std::floor(v), "optimizer load_state_dict: '", it->first,
                 "' must be one whole number in [1, ", steps, "] (the optimizer's 'step'), got ", describe(it->second));
        own = int64_t(v);
        ++used;
      }
      loaded[gi][pi] = std::move(slots);
      loaded_steps[gi].push_back(own);
    }
  }
  KS_CHECK(used == given.size(), "optimizer load_state_dict: ", given.size() - used,
           " entries do not belong to this optimizer's parameters (different model or groups?)");
  state_ = std::move(loaded);
  param_steps_ = std::move(loaded_steps);
  steps_ = int64_t(steps);
}

SGD::SGD(std::vector<ParamGroup> groups, SGDOptions opts)
    : Optimizer(std::move(groups), opts.lr, opts.weight_decay,
                opts.momentum != 0 ? std::vector<std::string>{"momentum_buffer"} : std::vector<std::string>{}),
      opts_(opts) {
  KS_CHECK(opts.momentum >= 0, "SGD: momentum must be >= 0, got ", opts.momentum);
  KS_CHECK(!opts.nesterov || (opts.momentum > 0 && opts.dampening == 0),
           "SGD: Nesterov momentum needs momentum > 0 and dampening 0");
}

void SGD::update(const Tensor& p, const Tensor& grad, std::vector<Tensor>& state, const ParamGroup& group,
                 int64_t step) {
  sgd_update_(p, grad, state.empty() ? Tensor() : state[0],
              {group.lr, opts_.momentum, opts_.dampening, group.weight_decay, opts_.nesterov, step == 1});
}

Adam::Adam(std::vector<ParamGroup> groups, AdamOptions opts, bool decoupled)
    : Optimizer(std::move(groups), opts.lr, opts.weight_decay, {"exp_avg", "exp_avg_sq"}),
      opts_(opts),
      decoupled_(decoupled) {
  KS_CHECK(opts.beta1 >= 0 && opts.beta1 < 1 && opts.beta2 >= 0 && opts.beta2 < 1,
           "Adam: betas must be in [0, 1), got (", opts.beta1, ", ", opts.beta2, ")");
  KS_CHECK(opts.eps >= 0, "Adam: eps must be >= 0, got ", opts.eps);
  KS_CHECK(opts.state_dtype == kFloat32 || opts.state_dtype == kBFloat16, "Adam: state_dtype must be float32 or ",
           "bf16, got ", name(opts.state_dtype));
  if (opts.state_dtype == kBFloat16) set_float32_state_dtype(kBFloat16);
}

void Adam::update(const Tensor& p, const Tensor& grad, std::vector<Tensor>& state, const ParamGroup& group,
                  int64_t step) {
  // The rounding seed of bfloat16 moments: this parameter at this update (ops/optim.h).
  adam_update_(p, grad, state[0], state[1],
               {group.lr, opts_.beta1, opts_.beta2, opts_.eps, group.weight_decay, decoupled_, step,
                param_key() * 0x9e3779b97f4a7c15ull + uint64_t(step)});
}

void scale_gradients(const std::vector<Tensor>& params, double factor) {
  for (const Tensor& p : params) {
    Tensor g = p.grad();
    if (!g.defined()) continue;
    if (!g.is_contiguous()) {
      g = contiguous_raw(g);
      p.set_grad(g);
    }
    scale_(g, factor);
  }
}

double clip_grad_norm(const std::vector<Tensor>& params, double max_norm) {
  KS_CHECK(max_norm > 0, "clip_grad_norm: max_norm must be > 0, got ", max_norm);
  double total = 0;
  for (const Tensor& p : params)
    if (p.grad().defined()) total += sum_of_squares(p.grad());
  const double norm = std::sqrt(total);
  if (!std::isfinite(norm) || norm <= max_norm) return norm;
  scale_gradients(params, max_norm / (norm + 1e-6));
  return norm;
}

}  // namespace ks::nn
