// autograd/function.h — writing a new differentiable op without touching the
// engine, in the style of torch.autograd.Function:
//
//   struct Cube : ks::Function<Cube> {
//     static Tensor forward(ks::AutogradContext& ctx, const Tensor& x) {
//       ctx.save_for_backward({x});
//       return ks::mul(ks::mul(x, x), x);
//     }
//     static std::vector<Tensor> backward(ks::AutogradContext& ctx, const std::vector<Tensor>& grad) {
//       Tensor x = ctx.saved()[0];
//       return {ks::mul(grad[0], ks::mul(ks::mul(x, x), 3.0))};
//     }
//   };
//   Tensor y = Cube::apply(x);
//
// forward runs with grad mode off; backward receives one gradient per output
// and returns one per Tensor argument of forward, in order (undefined for
// arguments that need none). Non-tensor arguments pass through untouched.
#pragma once

#include <any>
#include <map>
#include <memory>
#include <string>
#include <type_traits>

#include "autograd/node.h"

namespace ks {

class AutogradContext {
 public:
  void save_for_backward(const std::vector<Tensor>& tensors) {
    saved_.clear();
    for (const Tensor& t : tensors) saved_.emplace_back(t);
  }
  std::vector<Tensor> saved() const {
    std::vector<Tensor> out;
    for (const SavedTensor& s : saved_) out.push_back(s.unpack());
    return out;
  }
  bool needs_input_grad(size_t i) const { return i < needs_input_grad_.size() && needs_input_grad_[i]; }

  std::map<std::string, std::any> saved_data;  // non-tensor values backward needs
  std::vector<bool> needs_input_grad_;

 private:
  std::vector<SavedTensor> saved_;
};

template <class Derived> struct Function {
  template <class... Args> static Tensor apply(Args&&... args) {
    std::vector<Tensor> inputs;
    auto collect = [&](const auto& a) {
      if constexpr (std::is_same_v<std::decay_t<decltype(a)>, Tensor>) inputs.push_back(a);
    };
    (collect(args), ...);

    auto ctx = std::make_shared<AutogradContext>();
    Tensor out;
    {
      NoGradGuard no_grad;
      out = Derived::forward(*ctx, std::forward<Args>(args)...);
    }
    if (!needs_grad(inputs)) return out;
    // A fresh handle, so that returning an input unchanged cannot rewrite its history.
    out = out.alias(out.sizes(), out.strides(), out.storage_offset());
    for (const Tensor& t : inputs) ctx->needs_input_grad_.push_back(t.requires_grad());
    record(typeid(Derived).name(), inputs, {out},
           [ctx](const std::vector<Tensor>& grads) { return Derived::backward(*ctx, grads); });
    return out;
  }
};

}  // namespace ks
