// autograd/function.h — writing a new differentiable op without touching the
// engine, in the style of torch.autograd.Function:
//
//   struct Cube : ks::Function<Cube> {
//     static constexpr const char* name = "Cube";      // optional: errors name the op
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
// forward runs with grad mode off and returns a Tensor, or a
// std::vector<Tensor> for several outputs (apply then returns the vector).
// backward receives one gradient per output — undefined for an output that
// got none — and returns one per Tensor argument of forward, in order
// (undefined for arguments that need none). Non-tensor arguments pass through
// untouched. ctx.mark_non_differentiable({indices}) makes integer (or any)
// outputs carry no gradient.
//
// Higher order: backward is assumed to be written in differentiable ks ops,
// so a create_graph backward records through it (ctx.saved() then unpacks
// with history). A backward that uses raw loops or kernels declares
// `static constexpr bool once_differentiable = true;`, and differentiating its
// gradients throws, naming the op, instead of giving a silent zero.
#pragma once

#include <cxxabi.h>

#include <any>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <typeinfo>

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
  // Outputs of forward (the tensors it returns) that get no gradient.
  void mark_non_differentiable(const std::vector<Tensor>& outputs) {
    for (const Tensor& t : outputs) non_differentiable_.push_back(t.impl());
  }
  bool is_non_differentiable(const Tensor& output) const {
    for (const TensorImpl* p : non_differentiable_)
      if (p == output.impl()) return true;
    return false;
  }

  std::map<std::string, std::any> saved_data;  // non-tensor values backward needs
  std::vector<bool> needs_input_grad_;

 private:
  std::vector<SavedTensor> saved_;
  std::vector<const TensorImpl*> non_differentiable_;
};

// "Cube" for struct Cube, "mylib::Rms<float>" for a template: what errors call a Function.
template <class T> std::string function_name() {
  if constexpr (requires { std::string(T::name); }) {
    return std::string(T::name);
  } else {
    int status = 0;
    char* readable = abi::__cxa_demangle(typeid(T).name(), nullptr, nullptr, &status);
    std::string out = status == 0 && readable ? readable : typeid(T).name();
    std::free(readable);
    return out;
  }
}

template <class Derived> struct Function {
  template <class... Args> static auto apply(Args&&... args) {
    std::vector<Tensor> inputs;
    auto collect = [&](const auto& a) {
      if constexpr (std::is_same_v<std::decay_t<decltype(a)>, Tensor>) inputs.push_back(a);
    };
    (collect(args), ...);

    auto ctx = std::make_shared<AutogradContext>();
    using Result = decltype(Derived::forward(*ctx, std::forward<Args>(args)...));
    static_assert(std::is_same_v<Result, Tensor> || std::is_same_v<Result, std::vector<Tensor>>,
                  "Function::forward must return a Tensor or a std::vector<Tensor>");
    Result result;
    {
      NoGradGuard no_grad;
      result = Derived::forward(*ctx, std::forward<Args>(args)...);
    }
    if constexpr (std::is_same_v<Result, Tensor>) {
      return connect(ctx, inputs, {result})[0];
    } else {
      return connect(ctx, inputs, result);
    }
  }

 private:
  static std::vector<Tensor> connect(const std::shared_ptr<AutogradContext>& ctx, const std::vector<Tensor>& inputs,
                                     const std::vector<Tensor>& raw) {
    if (!needs_grad(inputs)) return raw;
    // Fresh handles, so that returning an input unchanged cannot rewrite its history.
    std::vector<Tensor> outputs;
    for (const Tensor& t : raw) {
      KS_CHECK(t.defined(), function_name<Derived>(), ": forward returned an undefined tensor");
      outputs.push_back(t.alias(t.sizes(), t.strides(), t.storage_offset()));
    }
    for (const Tensor& t : inputs) ctx->needs_input_grad_.push_back(t.requires_grad());
    constexpr bool once = [] {
      if constexpr (requires { Derived::once_differentiable; })
        return bool(Derived::once_differentiable);
      else
        return false;
    }();
    auto node = record(
        function_name<Derived>(), inputs, outputs,
        [ctx](const std::vector<Tensor>& grads) { return Derived::backward(*ctx, grads); },
        once ? HigherOrder::Unsupported : HigherOrder::Supported);
    node->materialize_grads = false;
    for (size_t k = 0; k < raw.size(); ++k) {
      node->output_ids.emplace_back(raw[k].impl(), uint32_t(k));  // what forward saved, before the alias
      if (ctx->is_non_differentiable(raw[k])) outputs[k].impl()->grad_fn = nullptr;
    }
    return outputs;
  }
};

}  // namespace ks
