// ops/elementwise.cpp — the dtype checks of the elementwise families, the
// forward of every binary op (checks, broadcasting, kernel) with the generic
// backward of binary<Op>, and add, sub, mul, div and the scalar forms with
// their own backwards. The formulas are descriptors (elementwise_formulas.h);
// the kernels are ops/elementwise_kernels.h's.
#include "ops/elementwise.h"

#include <cmath>
#include <string>

#include "autograd/node.h"
#include "ops/broadcast.h"
#include "ops/promote.h"
#include "ops/reduce.h"
#include "ops/view.h"

namespace ks {

void check_numeric(const char* op, const Tensor& t) {
  KS_CHECK(t.defined(), op, ": undefined input");
  const DType d = t.dtype();
  KS_CHECK(is_floating(d) || d == kInt64 || d == kInt32, op,
           ": expected a numeric tensor (float32, float64, bfloat16, float16, int64, int32), got ", describe(t));
}

void check_floating(const char* op, const Tensor& t) {
  KS_CHECK(t.defined(), op, ": undefined input");
  KS_CHECK(is_floating(t.dtype()), op, ": expected a floating tensor (float32, float64, bfloat16, float16), got ",
           describe(t));
}

void check_same_kind(const char* op, const Tensor& a, const Tensor& b) {
  KS_CHECK(a.defined() && b.defined(), op, ": undefined input");
  KS_CHECK(a.dtype() == b.dtype(), op, ": dtype mismatch, ", describe(a), " and ", describe(b));
  KS_CHECK(a.device() == b.device(), op, ": device mismatch, ", describe(a), " and ", describe(b));
}

void check_scalar_fits(const char* op, const Tensor& t, double s) {
  const DType d = t.dtype();
  if (d != kInt64 && d != kInt32) return;
  const double lim = d == kInt64 ? 9223372036854775808.0 : 2147483648.0;
  KS_CHECK(std::isfinite(s) && std::trunc(s) == s && s >= -lim && s < lim, op, ": scalar ", s,
           " does not fit the integer tensor ", describe(t), " (use an integer in range, or a float tensor)");
}

namespace {

// An integer or bool dividend or divisor as float32 (PyTorch's true division); others unchanged.
Tensor as_quotient(const Tensor& t) {
  return t.dtype() == kInt64 || t.dtype() == kInt32 || t.dtype() == kBool ? to(t, kFloat32) : t;
}

void check_div_dtype(const Tensor& t) {
  KS_CHECK(!(t.dtype() == kInt64 || t.dtype() == kInt32), "div: integer division is not supported (", describe(t),
           "); convert to float");
  check_floating("div", t);
}

}  // namespace

Tensor binary_forward(const BinaryInfo& op, const Tensor& a, const Tensor& b) {
  check_same_kind(op.name, a, b);
  if (op.integers)
    check_numeric(op.name, a);
  else
    check_floating(op.name, a);
  Shape shape = broadcast_shapes({a.sizes(), b.sizes()}, op.name);
  Tensor out = Tensor::empty(shape, a.dtype(), a.device());
  if (out.numel() > 0)
    op.forward(out.device(), out, broadcast_raw(a, shape, op.name), broadcast_raw(b, shape, op.name));
  return out;
}

namespace {

// dL/d(input `which`) of a (op) b at the broadcast shape (g's). `a` may be
// undefined when the formula does not read it.
Tensor binary_grad_full(const BinaryInfo& op, int which, const Tensor& g, const Tensor& a, const Tensor& b) {
  const Shape& shape = g.sizes();
  Tensor grad = Tensor::empty(shape, g.dtype(), g.device());
  if (grad.numel() > 0)
    op.backward(g.device(), which, grad, g, a.defined() ? broadcast_raw(a, shape, op.name) : a,
                broadcast_raw(b, shape, op.name));
  return grad;
}

// The same, reduced to that input's shape.
Tensor binary_grad(const BinaryInfo& op, int which, const Tensor& g, const Tensor& a, const Tensor& b,
                   const Shape& shape_in) {
  return sum_to(binary_grad_full(op, which, g, a, b), shape_in);
}

// The backward of a backward that is differentiated (create_graph): gx, the
// full-shape gradient for input `which` already computed by the kernel,
// recorded as an op of (g, a, b) named "<node>Backward". Its gradients: for g
// the same kernel on gg; for a and b the second derivatives (which + 0 for a,
// which + 1 for b: daa, dab, dbb) of gg · g, reduced to their shapes. They are
// kernels, so a third derivative raises an error naming that node.
void record_double_backward(const BinaryInfo& op, int which, const Tensor& gx, const Tensor& g, const Tensor& a,
                            const Tensor& b) {
  record(std::string(op.node) + "Backward", {g, a, b}, {gx},
         [op, which, sg = SavedTensor(g), sa = SavedTensor(a), sb = SavedTensor(b), need_g = g.requires_grad(),
          need_a = a.requires_grad(), need_b = b.requires_grad()](const std::vector<Tensor>& gg) {
           Tensor g_ = sg.unpack(), a_ = sa.unpack(), b_ = sb.unpack();
           const Shape& shape = g_.sizes();
           auto second = [&](int input) {
             Tensor d = Tensor::empty(shape, g_.dtype(), g_.device());
             if (d.numel() > 0)
               op.double_backward(d.device(), which + input, d, gg[0], g_, broadcast_raw(a_, shape, op.name),
                                  broadcast_raw(b_, shape, op.name));
             return sum_to(d, input == 0 ? a_.sizes() : b_.sizes());
           };
           Tensor dg, da, db;
           if (need_g) dg = binary_grad_full(op, which, gg[0], a_, b_);
           if (need_a) da = second(0);
           if (need_b) db = second(1);
           return std::vector<Tensor>{dg, da, db};
         });
}

Tensor negated(const Tensor& g);  // below, beside the scalar ops it uses

template <class Op> Tensor scalar_forward(const char* name, double s, const Tensor& x) {
  check_numeric(name, x);
  check_scalar_fits(name, x, s);
  Tensor out = Tensor::empty(x.sizes(), x.dtype(), x.device());
  if (out.numel() > 0) scalar_kernel<Op>(out.device(), s, out, x);
  return out;
}

}  // namespace

namespace {
// What each binary op's public function does: the operands promoted to one
// dtype, op's kernel, and, when either input needs a gradient, the node
// op.node with the backward that backward_for(a, b) returns: a closure over
// only what that op's gradients read.
template <class MakeBackward>
Tensor binary_recorded(const BinaryInfo& op, const Tensor& a_in, const Tensor& b_in, MakeBackward backward_for) {
  const auto operands = promoted(op.name, a_in, b_in);
  const Tensor &a = operands.first, &b = operands.second;
  Tensor out = binary_forward(op, a, b);
  if (needs_grad({a, b})) record(op.node, {a, b}, {out}, backward_for(a, b), HigherOrder::Supported);
  return out;
}
}  // namespace

Tensor binary_with_grads(const BinaryInfo& op, const Tensor& a_in, const Tensor& b_in) {
  return binary_recorded(op, a_in, b_in, [&op](const Tensor& a, const Tensor& b) {
    return [op, sa = SavedTensor(a), sb = SavedTensor(b), shape_a = a.sizes(), shape_b = b.sizes(),
            ga = a.requires_grad(), gb = b.requires_grad()](const std::vector<Tensor>& g) {
      Tensor a_ = sa.unpack(), b_ = sb.unpack();
      // Only under create_graph (grad mode on in backward); a plain backward does not build the vector.
      const bool differentiated = GradMode::is_enabled() && needs_grad({g[0], a_, b_});
      auto grad_for = [&](int which, const Shape& shape_in) {
        Tensor full = binary_grad_full(op, which, g[0], a_, b_);
        if (differentiated) record_double_backward(op, which, full, g[0], a_, b_);
        return sum_to(full, shape_in);
      };
      Tensor da, db;
      if (ga) da = grad_for(0, shape_a);
      if (gb) db = grad_for(1, shape_b);
      return std::vector<Tensor>{da, db};
    };
  });
}

Tensor add(const Tensor& a_in, const Tensor& b_in) {
  return binary_recorded(binary_info<binary_ops::Add>(), a_in, b_in, [](const Tensor& a, const Tensor& b) {
    return [sa = a.sizes(), sb = b.sizes()](const std::vector<Tensor>& g) {
      return std::vector<Tensor>{sum_to(g[0], sa), sum_to(g[0], sb)};
    };
  });
}

Tensor sub(const Tensor& a_in, const Tensor& b_in) {
  return binary_recorded(binary_info<binary_ops::Sub>(), a_in, b_in, [](const Tensor& a, const Tensor& b) {
    return [sa = a.sizes(), sb = b.sizes(), gb = b.requires_grad()](const std::vector<Tensor>& g) {
      // Reduce before negating: the reduced gradient may be much smaller.
      return std::vector<Tensor>{sum_to(g[0], sa), gb ? negated(sum_to(g[0], sb)) : Tensor()};
    };
  });
}

Tensor mul(const Tensor& a_in, const Tensor& b_in) {
  return binary_recorded(binary_info<binary_ops::Mul>(), a_in, b_in, [](const Tensor& a, const Tensor& b) {
    const bool ga = a.requires_grad(), gb = b.requires_grad();
    // x · x (MGK's ‖k‖², a variance): both gradients are g · x, computed once
    // and handed to x twice, so x's gradient sums the same two terms as before.
    const bool square = a.is_same(b);
    // Save each input only if the other one's gradient needs it.
    return [sa = SavedTensor(gb ? a : Tensor()), sb = SavedTensor(ga ? b : Tensor()), shape_a = a.sizes(),
            shape_b = b.sizes(), square](const std::vector<Tensor>& g) {
      Tensor da, db;
      if (sb.defined()) da = sum_to(mul(g[0], sb.unpack()), shape_a);
      if (sa.defined()) db = square && da.defined() ? da : sum_to(mul(g[0], sa.unpack()), shape_b);
      return std::vector<Tensor>{da, db};
    };
  });
}

Tensor div(const Tensor& a_in, const Tensor& b_in) {
  const auto operands = promoted("div", a_in, b_in);
  // True division, as PyTorch's: integers divide in float32.
  const Tensor a = as_quotient(operands.first), b = as_quotient(operands.second);
  check_same_kind("div", a, b);
  check_div_dtype(a);
  const BinaryInfo op = binary_info<binary_ops::Div>();
  Tensor out = binary_forward(op, a, b);
  if (needs_grad({a, b})) {
    const bool ga = a.requires_grad(), gb = b.requires_grad();
    // d(a/b)/da = 1/b reads only b; d(a/b)/db = -a/b² reads both.
    record(
        "DivBackward", {a, b}, {out},
        [op, sa = SavedTensor(gb ? a : Tensor()), sb = SavedTensor(b), shape_a = a.sizes(), shape_b = b.sizes(), ga,
         gb](const std::vector<Tensor>& g) {
          Tensor a_ = sa.unpack(), b_ = sb.unpack();
          Tensor da, db;
          if (GradMode::is_enabled()) {  // create_graph: the same formulas in differentiable ops
            if (ga) da = sum_to(div(g[0], b_), shape_a);
            if (gb) db = sum_to(negated(div(mul(g[0], a_), mul(b_, b_))), shape_b);
            return std::vector<Tensor>{da, db};
          }
          if (ga) da = binary_grad(op, 0, g[0], Tensor(), b_, shape_a);
          if (gb) db = binary_grad(op, 1, g[0], a_, b_, shape_b);
          return std::vector<Tensor>{da, db};
        },
        HigherOrder::Supported);
  }
  return out;
}

namespace {
Tensor add_scalar(const char* name, const Tensor& a, double b) {
  Tensor out = scalar_forward<binary_ops::AddScalar>(name, b, a);
  if (needs_grad({a}))
    record(
        "AddScalarBackward", {a}, {out}, [](const std::vector<Tensor>& g) { return g; }, HigherOrder::Supported);
  return out;
}
Tensor mul_scalar(const char* name, const Tensor& a, double b) {
  Tensor out = scalar_forward<binary_ops::MulScalar>(name, b, a);
  if (needs_grad({a}))
    record(
        "MulScalarBackward", {a}, {out},
        [b](const std::vector<Tensor>& g) { return std::vector<Tensor>{mul(g[0], b)}; }, HigherOrder::Supported);
  return out;
}
// -g, recorded only when g carries a graph (a backward with create_graph).
Tensor negated(const Tensor& g) { return mul_scalar("neg", g, -1.0); }
}  // namespace

Tensor add(const Tensor& a, double b) { return add_scalar("add", a, b); }
Tensor sub(const Tensor& a, double b) { return add_scalar("sub", a, -b); }
Tensor mul(const Tensor& a, double b) { return mul_scalar("mul", a, b); }
Tensor div(const Tensor& a_in, double b) {
  KS_CHECK(a_in.defined(), "div: undefined input");
  const Tensor a = as_quotient(a_in);
  check_div_dtype(a);
  // Multiplying by the reciprocal may differ from true division by one ulp;
  // it is what every framework's fast path does.
  return mul_scalar("div", a, 1.0 / b);
}
Tensor add(double a, const Tensor& b) { return add_scalar("add", b, a); }
Tensor mul(double a, const Tensor& b) { return mul_scalar("mul", b, a); }

Tensor sub(double a, const Tensor& b) {
  Tensor out = scalar_forward<binary_ops::RSubScalar>("sub", a, b);
  if (needs_grad({b}))
    record(
        "RSubScalarBackward", {b}, {out},
        [](const std::vector<Tensor>& g) { return std::vector<Tensor>{negated(g[0])}; }, HigherOrder::Supported);
  return out;
}

Tensor div(double a, const Tensor& b_in) {
  KS_CHECK(b_in.defined(), "div: undefined input");
  const Tensor b = as_quotient(b_in);
  check_div_dtype(b);
  Tensor out = scalar_forward<binary_ops::RDivScalar>("div", a, b);
  if (needs_grad({b}))
    // d(a/b)/db = -a/b² = -out/b.
    record(
        "RDivScalarBackward", {b}, {out},
        [sb = SavedTensor(b), a](const std::vector<Tensor>& g) {
          Tensor b_ = sb.unpack();
          return std::vector<Tensor>{div(mul(g[0], -a), mul(b_, b_))};
        },
        HigherOrder::Supported);
  return out;
}

}  // namespace ks
