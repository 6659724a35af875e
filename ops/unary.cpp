// ops/unary.cpp — checks and backward wiring of the unary ops; the formulas
// for f and f' live in the kernels (cpu/unary.cpp).
#include "ops/unary.h"

#include <cmath>

#include "autograd/node.h"
#include "ops/elementwise.h"

namespace ks {

constinit KernelTable<UnaryKernel> unary_kernel("unary");
constinit KernelTable<UnaryBackwardKernel> unary_backward_kernel("unary_backward");

namespace {

struct OpInfo {
  const char* name;
  const char* node;
  bool numeric;       // also int64/int32, else float only
  bool saves_output;  // backward reads f(x) rather than x
};

OpInfo info(UnaryOp op) {
  switch (op) {
    case UnaryOp::Neg: return {"neg", "NegBackward", true, false};
    case UnaryOp::Exp: return {"exp", "ExpBackward", false, true};
    case UnaryOp::Log: return {"log", "LogBackward", false, false};
    case UnaryOp::Sqrt: return {"sqrt", "SqrtBackward", false, true};
    case UnaryOp::Rsqrt: return {"rsqrt", "RsqrtBackward", false, true};
    case UnaryOp::Abs: return {"abs", "AbsBackward", true, false};
    case UnaryOp::Tanh: return {"tanh", "TanhBackward", false, true};
    case UnaryOp::Sigmoid: return {"sigmoid", "SigmoidBackward", false, true};
    case UnaryOp::Relu: return {"relu", "ReluBackward", true, true};
    case UnaryOp::Silu: return {"silu", "SiluBackward", false, false};
    case UnaryOp::Gelu: return {"gelu", "GeluBackward", false, false};
    case UnaryOp::GeluTanh: return {"gelu", "GeluTanhBackward", false, false};
    case UnaryOp::Elu: return {"elu", "EluBackward", false, false};
    case UnaryOp::Clamp: return {"clamp", "ClampBackward", true, false};
    case UnaryOp::Pow: return {"pow", "PowScalarBackward", false, false};
  }
  return {"?", "?", false, false};
}

Tensor unary_forward(UnaryOp op, const Tensor& x, const UnaryParams& p) {
  const OpInfo in = info(op);
  if (in.numeric) check_numeric(in.name, x);
  else check_floating(in.name, x);
  Tensor out = Tensor::empty(x.sizes(), x.dtype(), x.device());
  if (out.numel() > 0) unary_kernel(out.device(), op, p, out, x);
  return out;
}

Tensor unary_op(UnaryOp op, const Tensor& x, const UnaryParams& p = {}) {
  Tensor out = unary_forward(op, x, p);
  if (needs_grad({x})) {
    const OpInfo in = info(op);
    record(in.node, {x}, {out}, [op, p, saved = SavedTensor(in.saves_output ? out : x)](const std::vector<Tensor>& g) {
      Tensor s = saved.unpack();
      Tensor grad = Tensor::empty(s.sizes(), s.dtype(), s.device());
      if (grad.numel() > 0) unary_backward_kernel(grad.device(), op, p, grad, g[0], s);
      return std::vector<Tensor>{grad};
    });
  }
  return out;
}

}  // namespace

Tensor neg(const Tensor& x) {
  Tensor out = unary_forward(UnaryOp::Neg, x, {});
  if (needs_grad({x}))
    record("NegBackward", {x}, {out}, [](const std::vector<Tensor>& g) { return std::vector<Tensor>{neg(g[0])}; });
  return out;
}

Tensor exp(const Tensor& x) { return unary_op(UnaryOp::Exp, x); }
Tensor log(const Tensor& x) { return unary_op(UnaryOp::Log, x); }
Tensor sqrt(const Tensor& x) { return unary_op(UnaryOp::Sqrt, x); }
Tensor rsqrt(const Tensor& x) { return unary_op(UnaryOp::Rsqrt, x); }
Tensor abs(const Tensor& x) { return unary_op(UnaryOp::Abs, x); }
Tensor tanh(const Tensor& x) { return unary_op(UnaryOp::Tanh, x); }
Tensor sigmoid(const Tensor& x) { return unary_op(UnaryOp::Sigmoid, x); }
Tensor relu(const Tensor& x) { return unary_op(UnaryOp::Relu, x); }
Tensor silu(const Tensor& x) { return unary_op(UnaryOp::Silu, x); }
Tensor gelu(const Tensor& x, GeluApprox approx) {
  return unary_op(approx == GeluApprox::Tanh ? UnaryOp::GeluTanh : UnaryOp::Gelu, x);
}
Tensor elu(const Tensor& x, double alpha) { return unary_op(UnaryOp::Elu, x, {alpha, 0}); }
Tensor pow(const Tensor& x, double exponent) { return unary_op(UnaryOp::Pow, x, {exponent, 0}); }

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
  return unary_op(UnaryOp::Clamp, x, clamp_params("clamp", x, min, max));
}

}  // namespace ks
