// ops/loss.cpp — the loss ops: shape checks, the (N, C, d...) -> rows
// layout change, reductions and backward nodes; the loops are in cpu/loss.cpp.
#include "ops/loss.h"

#include "autograd/engine.h"
#include "autograd/node.h"
#include "core/copy.h"
#include "core/factory.h"
#include "ops/compare.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"
#include "ops/softmax.h"
#include "ops/unary.h"
#include "ops/view.h"

namespace ks {

constinit KernelTable<ClassLossKernel> class_loss_kernel("class_loss");
constinit KernelTable<ClassLossBackwardKernel> class_loss_backward_kernel("class_loss_backward");
constinit KernelTable<MseKernel> mse_kernel("mse_loss");
constinit KernelTable<MseBackwardKernel> mse_backward_kernel("mse_loss_backward");

namespace {

// x as (P, C) rows with the class dim last: (C) -> (1, C); (N, C) as is;
// (N, C, d1..dk) -> (N·d1···dk, C) by one copy. No autograd (kernels only).
Tensor class_rows(const Tensor& x) {
  if (x.dim() == 1) return x.alias({1, x.size(0)}, {x.size(0) * x.stride(0), x.stride(0)}, x.storage_offset());
  if (x.dim() == 2) return x;
  Shape sizes{x.size(0)}, strides{x.stride(0)};
  for (int64_t d = 2; d < x.dim(); ++d) {
    sizes.push_back(x.size(d));
    strides.push_back(x.stride(d));
  }
  sizes.push_back(x.size(1));
  strides.push_back(x.stride(1));
  Tensor moved = contiguous_raw(x.alias(sizes, strides, x.storage_offset()));
  const Shape rows{x.numel() / x.size(1), x.size(1)};
  return moved.alias(rows, contiguous_strides(rows), moved.storage_offset());
}

// The inverse of class_rows for a contiguous (P, C) gradient: a view of x's shape.
Tensor from_class_rows(const Tensor& rows, const Shape& x_shape) {
  if (x_shape.size() <= 2) return rows.alias(x_shape, contiguous_strides(x_shape), rows.storage_offset());
  Shape moved_sizes{x_shape[0]};
  for (size_t d = 2; d < x_shape.size(); ++d) moved_sizes.push_back(x_shape[d]);
  moved_sizes.push_back(x_shape[1]);
  const Shape ms = contiguous_strides(moved_sizes);
  Shape strides{ms[0], ms.back()};
  strides.insert(strides.end(), ms.begin() + 1, ms.end() - 1);
  return rows.alias(x_shape, strides, rows.storage_offset());
}

// A (P) view of the loss gradient: g itself for reduction None, else g's one value repeated.
Tensor per_position(const Tensor& g, int64_t P) {
  if (g.dim() == 0) return g.alias({P}, {0}, g.storage_offset());
  Tensor c = contiguous_raw(g);
  return c.alias({P}, {1}, c.storage_offset());
}

// The class losses in differentiable ops: -Σ_c q_c log p_c per position, with
// q = (1-ε)·onehot(target) + ε/C (zero where the target is ignored), reduced
// as asked; `denom` is the kernel's divisor for Mean. How a create_graph
// backward differentiates them (grad_by_recompute); the kernels are the fast path.
Tensor class_loss_in_ops(const Tensor& x, const Tensor& targets, const ClassLossSpec& spec, Reduction reduction,
                         const Tensor& denom) {
  const int64_t cd = x.dim() == 1 ? 0 : 1, C = x.size(cd);
  Tensor q;
  {
    NoGradGuard constant;
    Shape along(size_t(x.dim()), 1);
    along[size_t(cd)] = C;
    Tensor classes = reshape(arange(double(C), {.dtype = kInt64, .device = x.device()}), along);
    Tensor onehot = to(eq(classes, unsqueeze(targets, cd)), x.dtype());
    Tensor valid = to(unsqueeze(ne(targets, double(spec.ignore_index)), cd), x.dtype());
    q = mul(add(mul(onehot, 1.0 - spec.label_smoothing), spec.label_smoothing / double(C)), valid);
  }
  Tensor loss = neg(sum(mul(q, spec.from_logits ? log_softmax(x, cd) : x), {cd}));
  switch (reduction) {
    case Reduction::None: return loss;
    case Reduction::Sum: return sum(loss);
    case Reduction::Mean: return div(sum(loss), denom);
  }
  return loss;
}

Tensor class_loss(const char* name, const Tensor& x, const Tensor& targets, const ClassLossSpec& spec,
                  Reduction reduction) {
  KS_CHECK(x.defined() && targets.defined(), name, ": undefined input");
  KS_CHECK(is_floating(x.dtype()), name, ": expected floating ", spec.from_logits ? "logits" : "log_probs", ", got ",
           describe(x));
  KS_CHECK(targets.dtype() == kInt64, name, ": targets must be int64 class indices, got ", describe(targets));
  KS_CHECK(x.device() == targets.device(), name, ": input is on ", x.device().str(), " but targets are on ",
           targets.device().str());
  KS_CHECK(x.dim() >= 1, name, ": input must have a class dim, got ", describe(x));
  Shape want = x.sizes();
  want.erase(want.begin() + (x.dim() == 1 ? 0 : 1));
  KS_CHECK(targets.sizes() == want, name, ": targets ", targets.sizes(), " do not match input ", describe(x),
           " (expected targets ", want, "; the class dim is dim 1)");
  const int64_t C = x.size(x.dim() == 1 ? 0 : 1);
  KS_CHECK(C >= 1, name, ": input has no classes (", describe(x), ")");

  const Tensor rows = class_rows(x);
  const int64_t P = rows.size(0);
  const Tensor t = per_position(targets, P);
  Tensor loss = Tensor::empty({P}, x.dtype(), x.device());
  // A 16-bit input keeps its log-sum-exp in float32: the backward's exp(x - lse)
  // would inherit an lse rounded to 8 bits as a relative error of |lse|·2⁻⁹.
  const DType lse_dtype = is_16bit(x.dtype()) ? kFloat32 : x.dtype();
  Tensor lse = spec.from_logits ? Tensor::empty({P}, lse_dtype, x.device()) : Tensor();
  Tensor denom = Tensor::empty({}, x.dtype(), x.device());
  class_loss_kernel(x.device(), loss, lse, denom, rows, t, spec);

  Tensor out;
  switch (reduction) {
    case Reduction::None: out = loss.alias(targets.sizes(), contiguous_strides(targets.sizes()), 0); break;
    case Reduction::Sum: out = sum(loss); break;
    case Reduction::Mean: out = div(sum(loss), denom); break;
  }
  if (needs_grad({x}))
    // A create_graph backward recomputes from x: the rows when they are x
    // itself (2-d logits), else x too (a view of it, or the input log-probs).
    record(
        spec.from_logits ? "CrossEntropyBackward" : "NllLossBackward", {x}, {out},
        [spec, reduction, P, x_shape = x.sizes(), srows = SavedTensor(spec.from_logits ? rows : Tensor()),
         sx = SavedTensor(spec.from_logits && x.dim() == 2 ? Tensor() : x), starget = SavedTensor(targets),
         slse = SavedTensor(lse), st = SavedTensor(t), sdenom = SavedTensor(denom)](const std::vector<Tensor>& g) {
          const Tensor& gl = g[0];
          if (GradMode::is_enabled())
            return grad_by_recompute(
                [&](const std::vector<Tensor>& in) {
                  return std::vector<Tensor>{
                      class_loss_in_ops(in[0], starget.unpack(), spec, reduction, sdenom.unpack())};
                },
                {sx.defined() ? sx.unpack() : srows.unpack()}, {gl});
          const Tensor gpos = per_position(reduction == Reduction::Mean ? div(gl, sdenom.unpack()) : gl, P);
          Tensor dx = Tensor::empty({P, x_shape.size() == 1 ? x_shape[0] : x_shape[1]}, gl.dtype(), gl.device());
          class_loss_backward_kernel(dx.device(), dx, gpos, srows.unpack(), slse.unpack(), st.unpack(), spec);
          return std::vector<Tensor>{from_class_rows(dx, x_shape)};
        },
        HigherOrder::Supported);
  return out;
}

}  // namespace

Tensor cross_entropy(const Tensor& logits, const Tensor& targets, const CrossEntropyOptions& opts) {
  KS_CHECK(opts.label_smoothing >= 0 && opts.label_smoothing < 1,
           "cross_entropy: label_smoothing must be in [0, 1), got ", opts.label_smoothing);
  return class_loss("cross_entropy", logits, targets, {true, opts.ignore_index, opts.label_smoothing}, opts.reduction);
}

Tensor nll_loss(const Tensor& log_probs, const Tensor& targets, int64_t ignore_index, Reduction reduction) {
  return class_loss("nll_loss", log_probs, targets, {false, ignore_index, 0.0}, reduction);
}

Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  KS_CHECK(input.defined() && target.defined(), "mse_loss: undefined input");
  KS_CHECK(input.sizes() == target.sizes(), "mse_loss: shape mismatch, input ", describe(input), " vs target ",
           describe(target));
  KS_CHECK(input.dtype() == target.dtype(), "mse_loss: dtype mismatch, input ", describe(input), " vs target ",
           describe(target));
  KS_CHECK(is_floating(input.dtype()), "mse_loss: expected floating tensors, got ", describe(input));
  KS_CHECK(input.device() == target.device(), "mse_loss: input is on ", input.device().str(), " but target is on ",
           target.device().str());
  const bool reduce = reduction != Reduction::None;
  const double scale = reduction == Reduction::Mean ? 1.0 / double(std::max<int64_t>(input.numel(), 1)) : 1.0;
  Tensor out = Tensor::empty(reduce ? Shape{} : input.sizes(), input.dtype(), input.device());
  mse_kernel(out.device(), out, input, target, reduce, scale);
  if (needs_grad({input, target}))
    record(
        "MseLossBackward", {input, target}, {out},
        [sa = SavedTensor(input), sb = SavedTensor(target), reduce, scale, ga = input.requires_grad(),
         gb = target.requires_grad()](const std::vector<Tensor>& g) {
          const Tensor a = sa.unpack(), b = sb.unpack();
          if (GradMode::is_enabled()) {  // create_graph: d/da = 2·scale·(a - b)·g, d/db its negative
            Tensor da = mul(mul(sub(a, b), 2.0 * scale), g[0]);
            return std::vector<Tensor>{ga ? da : Tensor(), gb ? neg(da) : Tensor()};
          }
          // A reduced loss's gradient is one value for every element.
          const Tensor ge = reduce ? g[0].alias(a.sizes(), Shape(a.sizes().size(), 0), g[0].storage_offset()) : g[0];
          Tensor da = ga ? Tensor::empty(a.sizes(), a.dtype(), a.device()) : Tensor();
          Tensor db = gb ? Tensor::empty(a.sizes(), a.dtype(), a.device()) : Tensor();
          mse_backward_kernel(a.device(), da, db, a, b, ge, scale);
          return std::vector<Tensor>{da, db};
        },
        HigherOrder::Supported);
  return out;
}

}  // namespace ks
