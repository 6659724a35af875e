// nn/module.h — Module: a tree of named parameters, buffers and submodules.
//
// A layer subclasses Module, registers what it owns in its constructor, and
// offers a forward() of its own signature:
//
//   struct Affine : nn::Module {
//     Tensor weight, bias;
//     Affine(int64_t n) : Module("Affine") {
//       weight = register_parameter("weight", ones({n}));
//       bias = register_parameter("bias", zeros({n}));
//     }
//     Tensor forward(const Tensor& x) { return add(mul(x, weight), bias); }
//   };
//
// Names compose with dots through submodules (encoder.layers.0.attn.q.weight),
// so state dicts have stable keys. The handles a layer keeps and the ones the
// Module stores are the same tensors: to(device) rebinds them in place
// (Tensor::set_data), so no layer ever holds a stale handle.
// Not here: optimizers (nn/optim.h), checkpoint files (nn/checkpoint.h).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"

namespace ks {
struct Q8Matrix;  // ops/q8_0.h
}

namespace ks::nn {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;  // in registration order

// While one is alive on this thread, register_parameter and register_buffer
// cast each floating tensor to `dtype` as it registers it, in place (a tensor
// registered twice, a tied weight, stays one tensor): a model built under it
// holds what Module::to(dtype) would give, without the whole model ever
// existing in float32 (tools/train/run_dir.h load_run's dtype: a model
// evaluated or decoded in bf16). Scopes nest; the previous dtype comes back.
class ParameterDTypeScope {
 public:
  explicit ParameterDTypeScope(DType dtype);
  ~ParameterDTypeScope();
  ParameterDTypeScope(const ParameterDTypeScope&) = delete;
  ParameterDTypeScope& operator=(const ParameterDTypeScope&) = delete;
  // The scope's dtype on this thread, float32 outside one: a layer's large
  // parameters are made in it (nn/layers.h), so no float32 copy of them is
  // ever made for the cast.
  static DType current();

 private:
  std::optional<DType> previous_;
};

// While one is alive on this thread, a Linear or an Embedding built whose
// rows are a multiple of 32 values long keeps its weight as Q8_0 blocks
// (ops/q8_0.h; Module::register_quantized) instead of a float parameter,
// all zero (no initial values are drawn for it: no float32 weight is ever
// made). For a model whose weights are loaded next (tools/train/run_dir.h
// load_run's q8_0: eval and generate --dtype q8_0, a slab of rows at a
// time, nn/checkpoint.h load_weights). Scopes nest.
class Q8WeightScope {
 public:
  Q8WeightScope();
  ~Q8WeightScope();
  Q8WeightScope(const Q8WeightScope&) = delete;
  Q8WeightScope& operator=(const Q8WeightScope&) = delete;
  static bool active();

 private:
  bool previous_;
};

using NamedQuantized = std::vector<std::pair<std::string, std::shared_ptr<Q8Matrix>>>;

class Module {
 public:
  explicit Module(std::string type_name = "Module") : type_name_(std::move(type_name)) {}
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // --- registration (from constructors) ---
  // Stores `value` as a parameter (marking it requires_grad) and returns it.
  Tensor register_parameter(const std::string& name, Tensor value);
  // Stores state that is saved and moved with the module but not trained.
  Tensor register_buffer(const std::string& name, Tensor value);
  // Stores a weight held as Q8_0 blocks in place of a parameter (see
  // Q8WeightScope): not trained and not in state_dict() (a model holding
  // one cannot be saved), but loaded by load_state_dict and load_weights
  // under its name from a floating tensor of its (rows, cols) shape,
  // quantized as it is read. CPU only.
  std::shared_ptr<Q8Matrix> register_quantized(const std::string& name, std::shared_ptr<Q8Matrix> value);
  template <class M> std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
    add_child(name, module);
    return module;
  }

  // --- traversal (recursive, dotted names) ---
  std::vector<Tensor> parameters() const;
  NamedTensors named_parameters() const;
  NamedTensors named_buffers() const;
  NamedQuantized named_quantized() const;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> named_children() const { return children_; }
  int64_t num_parameters() const;

  // --- mode and placement ---
  virtual void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }
  void to(Device device);
  void to(DType dtype);  // floating parameters and buffers only
  void zero_grad();      // drops every parameter's .grad
  // Activation checkpointing for the whole tree (train.checkpoint_layers):
  // modules that support it (the Transformer layers) then keep only their
  // inputs in training and recompute the rest in backward (autograd/checkpoint.h).
  void set_activation_checkpointing(bool on);
  bool activation_checkpointing() const { return checkpointing_; }

  // --- state ---
  // Parameters then buffers of the whole tree, by dotted name; the tensors
  // are detached aliases of the live ones (no copy).
  NamedTensors state_dict() const;
  // Copies values in. Throws one ks::Error listing every missing key,
  // unexpected key (when strict) and shape mismatch.
  void load_state_dict(const NamedTensors& state, bool strict = true);
  // load_state_dict's checks for a state known only by description (a file
  // not read yet: nn/checkpoint.h load_weights): `names` are the state's
  // (in the order an unexpected one is listed), `stored(name)` its shape and
  // dtype. Throws the same error; a dtype mismatch between floating types is
  // allowed when cast_floating (a cast asked for).
  struct StoredTensor {
    Shape shape;
    DType dtype;
  };
  void check_state(const std::vector<std::string>& names, const std::function<StoredTensor(const std::string&)>& stored,
                   bool strict, bool cast_floating = false) const;

  // The names of this module's own parameters (as registered, no prefix)
  // that an optimizer should not decay: what decay would pull to a wrong
  // prior, such as MGK's mixture logits. Children answer for theirs;
  // nn::decay_groups asks every module of the tree.
  virtual std::vector<std::string> no_weight_decay() const { return {}; }

  const std::string& type_name() const { return type_name_; }
  // An indented tree: "Encoder(\n  (layers): ModuleList(...)...".
  std::string to_string() const;

 private:
  void add_child(const std::string& name, std::shared_ptr<Module> module);
  void check_name(const std::string& name) const;
  void collect(const std::string& prefix, bool params, NamedTensors& out) const;

  std::string type_name_;
  bool training_ = true;
  bool checkpointing_ = false;
  NamedTensors params_;
  NamedTensors buffers_;
  NamedQuantized quantized_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
};

// Puts a module in eval mode for a scope (evaluation, generation) and gives
// back the caller's mode on exit, a throw included.
class EvalModeGuard {
 public:
  explicit EvalModeGuard(Module& m) : module_(m), was_training_(m.is_training()) { m.eval(); }
  ~EvalModeGuard() { module_.train(was_training_); }
  EvalModeGuard(const EvalModeGuard&) = delete;
  EvalModeGuard& operator=(const EvalModeGuard&) = delete;

 private:
  Module& module_;
  bool was_training_;
};

}  // namespace ks::nn
