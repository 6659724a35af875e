// ops/elementwise.cpp — forward checks and backward formulas of the
// elementwise ops; the loops are in cpu/elementwise.cpp.
#include "ops/elementwise.h"

#include "autograd/node.h"
#include "ops/broadcast.h"
#include "ops/reduce.h"

namespace ks {

constinit KernelTable<BinaryKernel> binary_kernel("binary");
constinit KernelTable<ScalarKernel> scalar_kernel("scalar");

namespace {

const char* op_name(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add: return "add";
    case BinaryOp::Sub: return "sub";
    case BinaryOp::Mul: return "mul";
    case BinaryOp::Div: return "div";
  }
  return "?";
}

Tensor binary_forward(BinaryOp op, const Tensor& a, const Tensor& b) {
  const char* name = op_name(op);
  KS_CHECK(a.defined() && b.defined(), name, ": undefined input");
  KS_CHECK(a.dtype() == b.dtype(), name, ": dtype mismatch, ", describe(a), " and ", describe(b));
  KS_CHECK(a.device() == b.device(), name, ": device mismatch, ", describe(a), " and ", describe(b));
  Shape shape = broadcast_shapes({a.sizes(), b.sizes()}, name);
  Tensor out = Tensor::empty(shape, a.dtype(), a.device());
  binary_kernel(out.device(), op, out, broadcast_raw(a, shape, name), broadcast_raw(b, shape, name));
  return out;
}

Tensor scalar_forward(ScalarOp op, double s, const Tensor& x) {
  KS_CHECK(x.defined(), "scalar op: undefined input");
  Tensor out = Tensor::empty(x.sizes(), x.dtype(), x.device());
  scalar_kernel(out.device(), op, s, out, x);
  return out;
}

}  // namespace

Tensor add(const Tensor& a, const Tensor& b) {
  Tensor out = binary_forward(BinaryOp::Add, a, b);
  if (needs_grad({a, b}))
    record("AddBackward", {a, b}, {out}, [sa = a.sizes(), sb = b.sizes()](const std::vector<Tensor>& g) {
      return std::vector<Tensor>{sum_to(g[0], sa), sum_to(g[0], sb)};
    });
  return out;
}

Tensor sub(const Tensor& a, const Tensor& b) {
  Tensor out = binary_forward(BinaryOp::Sub, a, b);
  if (needs_grad({a, b}))
    record("SubBackward", {a, b}, {out}, [sa = a.sizes(), sb = b.sizes()](const std::vector<Tensor>& g) {
      return std::vector<Tensor>{sum_to(g[0], sa), sum_to(scalar_forward(ScalarOp::Mul, -1.0, g[0]), sb)};
    });
  return out;
}

Tensor mul(const Tensor& a, const Tensor& b) {
  Tensor out = binary_forward(BinaryOp::Mul, a, b);
  if (needs_grad({a, b})) {
    const bool ga = a.requires_grad(), gb = b.requires_grad();
    // Save each input only if the other one's gradient needs it.
    record("MulBackward", {a, b}, {out},
           [sa = SavedTensor(gb ? a : Tensor()), sb = SavedTensor(ga ? b : Tensor()), shape_a = a.sizes(),
            shape_b = b.sizes()](const std::vector<Tensor>& g) {
             Tensor da, db;
             if (sb.defined()) da = sum_to(mul(g[0], sb.unpack()), shape_a);
             if (sa.defined()) db = sum_to(mul(g[0], sa.unpack()), shape_b);
             return std::vector<Tensor>{da, db};
           });
  }
  return out;
}

Tensor div(const Tensor& a, const Tensor& b) {
  Tensor out = binary_forward(BinaryOp::Div, a, b);
  if (needs_grad({a, b})) {
    const bool gb = b.requires_grad();
    // d(a/b)/da = 1/b; d(a/b)/db = -a/b² = -out/b.
    record("DivBackward", {a, b}, {out},
           [sb = SavedTensor(b), sout = SavedTensor(gb ? out : Tensor()), shape_a = a.sizes(),
            shape_b = b.sizes(), ga = a.requires_grad()](const std::vector<Tensor>& g) {
             Tensor b_ = sb.unpack();
             Tensor g_over_b = div(g[0], b_);
             Tensor da, db;
             if (ga) da = sum_to(g_over_b, shape_a);
             if (sout.defined()) db = sum_to(mul(mul(g_over_b, sout.unpack()), -1.0), shape_b);
             return std::vector<Tensor>{da, db};
           });
  }
  return out;
}

Tensor add(const Tensor& a, double b) {
  Tensor out = scalar_forward(ScalarOp::Add, b, a);
  if (needs_grad({a})) record("AddScalarBackward", {a}, {out}, [](const std::vector<Tensor>& g) { return g; });
  return out;
}

Tensor sub(const Tensor& a, double b) { return add(a, -b); }

Tensor mul(const Tensor& a, double b) {
  Tensor out = scalar_forward(ScalarOp::Mul, b, a);
  if (needs_grad({a}))
    record("MulScalarBackward", {a}, {out},
           [b](const std::vector<Tensor>& g) { return std::vector<Tensor>{mul(g[0], b)}; });
  return out;
}

Tensor div(const Tensor& a, double b) { return mul(a, 1.0 / b); }

}  // namespace ks
