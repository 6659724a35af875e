// examples/squareplus/squareplus.cpp — squareplus's checks and autograd: a
// ks::Function (autograd/function.h) whose forward and backward call the
// op's kernel tables, so the device of x picks the kernel and the op itself
// names no backend. Not here: the kernels (kernels.h).
#include "squareplus/squareplus.h"

#include <any>

#include "autograd/function.h"
#include "core/error.h"
#include "ops/elementwise.h"

namespace myops {
namespace {

using ks::Tensor;

struct Squareplus : ks::Function<Squareplus> {
  static Tensor forward(ks::AutogradContext& ctx, const Tensor& x, double b) {
    Tensor out = Tensor::empty(x.sizes(), x.dtype(), x.device());
    if (out.numel() > 0) squareplus_kernel(x.device(), out, x, b);
    ctx.save_for_backward({x});
    ctx.saved_data["b"] = b;
    return out;
  }
  static std::vector<Tensor> backward(ks::AutogradContext& ctx, const std::vector<Tensor>& grad) {
    const Tensor x = ctx.saved()[0];
    Tensor grad_x = Tensor::empty(x.sizes(), x.dtype(), x.device());
    if (grad_x.numel() > 0)
      squareplus_backward_kernel(x.device(), grad_x, grad[0], x, std::any_cast<double>(ctx.saved_data.at("b")));
    return {grad_x};
  }
};

}  // namespace

Tensor squareplus(const Tensor& x, double b) {
  ks::check_floating("squareplus", x);
  KS_CHECK(b > 0, "squareplus: b must be > 0, got ", b);
  return Squareplus::apply(x, b);
}

}  // namespace myops
