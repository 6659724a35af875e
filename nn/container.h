// nn/container.h — ModuleList (an indexed list of submodules named 0, 1, ...)
// and Sequential (a chain of tensor-to-tensor modules).
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "nn/module.h"

namespace ks::nn {

template <class M = Module> class ModuleList : public Module {
 public:
  ModuleList() : Module("ModuleList") {}
  void push_back(std::shared_ptr<M> m) {
    register_module(std::to_string(items_.size()), m);
    items_.push_back(std::move(m));
  }
  size_t size() const { return items_.size(); }
  M& operator[](size_t i) const { return *items_.at(i); }
  auto begin() const { return items_.begin(); }
  auto end() const { return items_.end(); }

 private:
  std::vector<std::shared_ptr<M>> items_;
};

// Applies each stage in turn. A stage is any module with Tensor forward(const Tensor&).
class Sequential : public Module {
 public:
  Sequential() : Module("Sequential") {}
  template <class M> Sequential& add(std::shared_ptr<M> m) {
    register_module(std::to_string(stages_.size()), m);
    stages_.push_back([m](const Tensor& x) { return m->forward(x); });
    return *this;
  }
  // A parameter-free stage (e.g. an activation). It takes an index, as in
  // PyTorch, so the stage after it is named by its position in the chain.
  Sequential& add(std::function<Tensor(const Tensor&)> fn) {
    stages_.push_back(std::move(fn));
    return *this;
  }
  Tensor forward(const Tensor& x) const {
    Tensor h = x;
    for (const auto& stage : stages_) h = stage(h);
    return h;
  }

 private:
  std::vector<std::function<Tensor(const Tensor&)>> stages_;
};

}  // namespace ks::nn
