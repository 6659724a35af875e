// ops/unary.cpp — the one forward of every unary op (checks, output, kernel,
// backward recorded as the descriptor says), and the ops that pick their
// descriptor or pack parameters: gelu, elu, clamp, pow. The formulas are the
// descriptors' (unary_formulas.h); the kernels are ops/unary_kernels.h's.
#include "ops/unary.h"

#include <cmath>
#include <string>

#include "autograd/node.h"
#include "ops/elementwise.h"
#include "ops/linalg.h"
#include "ops/view.h"

namespace ks {

namespace {

// The backward of a backward that is differentiated (create_graph): gx =
// df(g, s) = g · h(s), already computed by the kernel, recorded as an op of
// (g, s) named "<node>Backward". Its gradients are df(gg, s) for g and
// ddf(gg · g, s) for s, by kernels, so a third derivative raises an error
// naming that node.
void record_double_backward(const UnaryInfo& op, const UnaryParams& p, const Tensor& gx, const Tensor& g,
                            const Tensor& s) {
  const bool need_s = s.requires_grad();
  record(std::string(op.node) + "Backward", {g, s}, {gx},
         [op, p, sg = SavedTensor(need_s ? g : Tensor()), ss = SavedTensor(s), need_g = g.requires_grad(),
          need_s](const std::vector<Tensor>& gg) {
           Tensor s_ = ss.unpack();
           Tensor dg, ds;
           if (need_g) {
             dg = Tensor::empty(s_.sizes(), s_.dtype(), s_.device());
             if (dg.numel() > 0) op.backward(dg.device(), p, dg, gg[0], s_);
           }
           if (need_s) {
             ds = Tensor::empty(s_.sizes(), s_.dtype(), s_.device());
             if (ds.numel() > 0) op.double_backward(ds.device(), p, ds, gg[0], sg.unpack(), s_);
           }
           return std::vector<Tensor>{dg, ds};
         });
}

}  // namespace

Tensor unary_apply(const UnaryInfo& op, const Tensor& x, const UnaryParams& p) {
  if (op.integers)
    check_numeric(op.name, x);
  else
    check_floating(op.name, x);
  Tensor out = Tensor::empty(x.sizes(), x.dtype(), x.device());
  if (out.numel() > 0) op.forward(out.device(), p, out, x);
  if (!needs_grad({x})) return out;
  if (op.saves == Saves::Self) {  // linear: the backward is the op on the gradient (differentiable again)
    record(
        op.node, {x}, {out},
        [op, p](const std::vector<Tensor>& g) { return std::vector<Tensor>{unary_apply(op, g[0], p)}; },
        HigherOrder::Supported);
    return out;
  }
  // An activation's input rounded to bf16 is widened back for the
  // derivative: under bf16 precision the derivative is taken at the rounded
  // input (the bf16 saving: half the bytes of a feed-forward layer's widest
  // activation), elsewhere at the input itself.
  const Tensor saved = op.saves == Saves::Output       ? out
                       : op.saves == Saves::Activation ? input_saved_for_backward(x)
                                                       : x;
  record(
      op.node, {x}, {out},
      [op, p, saved = SavedTensor(saved), dtype = x.dtype()](const std::vector<Tensor>& g) {
        const Tensor s = widened_saved_input(saved.unpack(), dtype);
        Tensor grad = Tensor::empty(s.sizes(), s.dtype(), s.device());
        if (grad.numel() > 0) op.backward(grad.device(), p, grad, g[0], s);
        // Only under create_graph (grad mode on in backward); a plain backward does not build the vector.
        if (GradMode::is_enabled() && needs_grad({g[0], s})) record_double_backward(op, p, grad, g[0], s);
        return std::vector<Tensor>{grad};
      },
      HigherOrder::Supported);
  return out;
}

Tensor gelu(const Tensor& x, GeluApprox approx) {
  return approx == GeluApprox::Tanh ? unary<unary_ops::GeluTanh>(x) : unary<unary_ops::Gelu>(x);
}
Tensor elu(const Tensor& x, double alpha) { return unary<unary_ops::Elu>(x, {alpha, 0}); }

Tensor pow(const Tensor& x, double exponent) {
  Tensor out;
  for_each_op<unary_ops::PowOps>([&]<class Op>() {
    if (!out.defined() && Op::matches(exponent)) out = unary<Op>(x, {exponent, exponent - 1});
  });
  return out;
}

UnaryParams clamp_params(const char* op, const Tensor& x, std::optional<double> min, std::optional<double> max) {
  KS_CHECK(x.defined(), op, ": undefined input");
  KS_CHECK(min || max, op, ": at least one of min and max must be given");
  KS_CHECK(!(min && std::isnan(*min)) && !(max && std::isnan(*max)), op, ": a bound is NaN");
  KS_CHECK(!(min && max && *min > *max), op, ": min ", *min, " is greater than max ", *max);
  if (min) check_scalar_fits(op, x, *min);
  if (max) check_scalar_fits(op, x, *max);
  return {min.value_or(-INFINITY), max.value_or(INFINITY)};
}

Tensor clamp(const Tensor& x, std::optional<double> min, std::optional<double> max) {
  return unary<unary_ops::Clamp>(x, clamp_params("clamp", x, min, max));
}

}  // namespace ks
