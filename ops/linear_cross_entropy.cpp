// ops/linear_cross_entropy.cpp — the chunked output layer + cross-entropy
// (ops/linear_cross_entropy.h): checks, the chunk loop of forward and
// backward over the devices' gemm and class-loss kernels, and the backward
// node. No kernel of its own: the loops are the GEMMs' and ops/cpu/loss.cpp's
// (ops/cuda/loss.cu's).
#include "ops/linear_cross_entropy.h"

#include <algorithm>

#include "autograd/engine.h"
#include "autograd/grad_mode.h"
#include "autograd/node.h"
#include "core/copy.h"
#include "core/factory.h"
#include "ops/compare.h"
#include "ops/elementwise.h"
#include "ops/inplace.h"
#include "ops/linalg.h"
#include "ops/reduce.h"
#include "ops/unary.h"
#include "ops/view.h"

namespace ks {

namespace {

constexpr int64_t kChunkBytes = int64_t(8) << 20;  // logits per chunk: fits a large L2/L3 slice

int64_t resolve_chunk(int64_t chunk_rows, int64_t V, int64_t N, DType dtype) {
  if (chunk_rows <= 0) chunk_rows = std::max<int64_t>(64, kChunkBytes / (V * itemsize(dtype)));
  return std::max<int64_t>(1, std::min(chunk_rows, N));
}

// Rows [r0, r1) of a contiguous (N, k) matrix, as a (r1 - r0, k) view.
Tensor rows(const Tensor& m, int64_t r0, int64_t r1) {
  const int64_t k = m.size(1);
  return m.alias({r1 - r0, k}, {k, 1}, m.storage_offset() + r0 * k);
}
Tensor span(const Tensor& v, int64_t r0, int64_t r1) {
  return v.alias({r1 - r0}, {v.stride(0)}, v.storage_offset() + r0 * v.stride(0));
}

// weightᵀ as a (d, V) view of (V, d) weight, read by GEMMs through a transpose flag.
Tensor transposed(const Tensor& w) {
  return w.alias({w.size(1), w.size(0)}, {w.stride(1), w.stride(0)}, w.storage_offset());
}

// logits (r, V) = x_rows · weightᵀ (+ bias): the same kernels linear's forward calls.
void chunk_logits(const Tensor& logits, const Tensor& x_rows, const Tensor& weight, const Tensor& bias) {
  const Tensor wt = transposed(weight);
  if (bias.defined() && gemm_bias_kernel.has(logits.device().type))
    return gemm_bias_kernel(logits.device(), logits, x_rows, wt, bias);
  if (bias.defined()) copy_(logits, bias.alias(logits.sizes(), {0, bias.stride(0)}, bias.storage_offset()));
  gemm_kernel(logits.device(), logits, x_rows, wt, bias.defined());
}

// x (..., d) as a contiguous (N, d) matrix (a view where it already is one).
Tensor as_rows(const Tensor& x, int64_t N) {
  const Tensor c = contiguous_raw(x);
  return c.alias({N, x.size(-1)}, {x.size(-1), 1}, c.storage_offset());
}

// The unfused composition, which a create_graph backward differentiates.
Tensor in_ops(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& t,
              const CrossEntropyOptions& opts) {
  return cross_entropy(reshape(linear(x, weight, bias), {t.numel(), weight.size(0)}), t, opts);
}

struct Grads {
  Tensor dx, dw, db;  // (N, d), (V, d), (V); each undefined when not wanted
};

// One pass over the chunks of rows. With `loss` defined it computes each
// row's loss and lse (the forward); with `gpos` (N) defined, the gradients of
// Σ gpos_r · loss_r into `grads` (the backward), from lse when `loss` is
// undefined and else from the lse it has just computed.
void chunk_pass(const Tensor& x2, const Tensor& w, const Tensor& b, const Tensor& t, const ClassLossSpec& spec,
                int64_t chunk, const Tensor& loss, const Tensor& lse, const Tensor& gpos, Grads& grads) {
  const int64_t N = x2.size(0), V = w.size(0);
  Tensor logits = Tensor::empty({std::min(chunk, N), V}, x2.dtype(), x2.device());
  Tensor chunk_denom = Tensor::empty({}, x2.dtype(), x2.device());  // unused: the caller counts all rows
  for (int64_t r0 = 0; r0 < N; r0 += chunk) {
    const int64_t r1 = std::min(N, r0 + chunk);
    const Tensor l = rows(logits, 0, r1 - r0), xr = rows(x2, r0, r1);
    chunk_logits(l, xr, w, b);
    if (loss.defined())
      class_loss_kernel(l.device(), span(loss, r0, r1), span(lse, r0, r1), chunk_denom, l, span(t, r0, r1), spec);
    if (!gpos.defined()) continue;
    // ∂/∂logits in place of the logits, then the two products and the bias's row sum.
    class_loss_backward_kernel(l.device(), l, span(gpos, r0, r1), l, span(lse, r0, r1), span(t, r0, r1), spec);
    if (grads.dx.defined()) gemm_kernel(l.device(), rows(grads.dx, r0, r1), l, w, false);  // (r, V) · (V, d)
    if (grads.dw.defined()) gemm_kernel(l.device(), grads.dw, transposed(l), xr, r0 > 0);  // += (V, r) · (r, d)
    if (grads.db.defined()) {
      if (r0 == 0)
        copy_(grads.db, sum(l, {0}));
      else
        add_(grads.db, sum(l, {0}));
    }
  }
}

Grads empty_grads(bool want_x, bool want_w, bool want_b, int64_t N, int64_t V, int64_t d, const Tensor& like) {
  auto make = [&](bool want, Shape shape) {
    return want ? Tensor::empty(shape, like.dtype(), like.device()) : Tensor();
  };
  return {make(want_x, {N, d}), make(want_w, {V, d}), make(want_b, {V})};
}

// g (N) or () as a per-row (N) view.
Tensor per_row(const Tensor& g, int64_t N) {
  if (g.dim() == 0) return g.alias({N}, {0}, g.storage_offset());
  const Tensor c = contiguous_raw(g);
  return c.alias({N}, {1}, c.storage_offset());
}

}  // namespace

Tensor linear_cross_entropy(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& targets,
                            const CrossEntropyOptions& opts, int64_t chunk_rows) {
  const char* op = "linear_cross_entropy";
  KS_CHECK(x.defined() && weight.defined() && targets.defined(), op, ": undefined input");
  KS_CHECK(x.dtype() == weight.dtype() && (x.dtype() == kFloat32 || x.dtype() == kFloat64), op,
           ": x and weight must both be float32 or both float64, got ", describe(x), " and ", describe(weight));
  KS_CHECK(weight.dim() == 2, op, ": weight must be 2-d (classes, in_features), got ", describe(weight));
  KS_CHECK(x.dim() >= 1 && x.size(-1) == weight.size(1), op, ": input ", describe(x), " does not fit weight ",
           describe(weight));
  KS_CHECK(x.device() == weight.device() && x.device() == targets.device(), op, ": device mismatch, ", describe(x),
           ", ", describe(weight), " and targets ", describe(targets));
  KS_CHECK(targets.dtype() == kInt64, op, ": targets must be int64 class indices, got ", describe(targets));
  Shape lead = x.sizes();
  lead.pop_back();
  KS_CHECK(targets.sizes() == lead, op, ": targets ", describe(targets), " do not match input ", describe(x),
           " (expected targets ", lead, ")");
  const int64_t V = weight.size(0), d = weight.size(1);
  KS_CHECK(V >= 1, op, ": weight has no classes (", describe(weight), ")");
  if (bias.defined())
    KS_CHECK(bias.dtype() == x.dtype() && bias.device() == x.device() && bias.sizes() == Shape{V}, op,
             ": bias must be ", x.dtype(), " of shape [", V, "] on ", x.device().str(), ", got ", describe(bias));
  KS_CHECK(opts.label_smoothing >= 0 && opts.label_smoothing < 1, op, ": label_smoothing must be in [0, 1), got ",
           opts.label_smoothing);

  const int64_t N = targets.numel();
  const Tensor x2 = as_rows(x, N);                                                         // (N, d)
  const Tensor tc = contiguous_raw(targets), t = tc.alias({N}, {1}, tc.storage_offset());  // (N)
  const ClassLossSpec spec{true, opts.ignore_index, opts.label_smoothing};
  const int64_t chunk = resolve_chunk(chunk_rows, V, N, x.dtype());
  // The divisor of Mean as the class-loss kernel counts it: non-ignored rows, at least 1.
  const Tensor denom = clamp(sum(to(ne(t, double(opts.ignore_index)), x.dtype())), 1.0, std::nullopt);

  Tensor loss = Tensor::empty({N}, x.dtype(), x.device());  // each row's loss, 0 where ignored
  Tensor lse = Tensor::empty({N}, x.dtype(), x.device());   // each row's log Σ exp(logits)
  const bool want_x = x.requires_grad(), want_w = weight.requires_grad(),
             want_b = bias.defined() && bias.requires_grad();
  // A reduced loss's gradient is its incoming scalar g times the gradient for
  // g = 1, which the forward forms while it holds each chunk's logits (as
  // Liger's fused kernels do): the backward then only scales, and no GEMM is
  // done twice. Per-row losses (Reduction::None) have one g per row, known
  // only in backward, which recomputes the chunks' logits instead.
  const bool grad = needs_grad({x, weight, bias});
  const bool early = grad && opts.reduction != Reduction::None;
  Grads unit = early ? empty_grads(want_x, want_w, want_b, N, V, d, x) : Grads{};
  const Tensor unit_g =
      early ? per_row(opts.reduction == Reduction::Mean ? div(ones_like(denom), denom) : ones_like(denom), N)
            : Tensor();
  chunk_pass(x2, weight, bias, t, spec, chunk, loss, lse, unit_g, unit);

  Tensor out;
  switch (opts.reduction) {
    case Reduction::None: out = loss.alias(targets.sizes(), contiguous_strides(targets.sizes()), 0); break;
    case Reduction::Sum: out = sum(loss); break;
    case Reduction::Mean: out = div(sum(loss), denom); break;
  }
  if (!grad) return out;
  record(
      "LinearCrossEntropyBackward", {x, weight, bias}, {out},
      [opts, spec, chunk, N, V, d, want_x, want_w, want_b, unit, sx = SavedTensor(x), sw = SavedTensor(weight),
       sb = SavedTensor(bias), st = SavedTensor(t), slse = SavedTensor(lse),
       sdenom = SavedTensor(denom)](const std::vector<Tensor>& g) {
        const Tensor x = sx.unpack(), w = sw.unpack(), b = sb.unpack(), t = st.unpack();
        if (GradMode::is_enabled()) {  // create_graph: through the unfused ops
          std::vector<Tensor> in{x, w};
          if (b.defined()) in.push_back(b);
          std::vector<Tensor> gr = grad_by_recompute(
              [&](const std::vector<Tensor>& v) {
                return std::vector<Tensor>{in_ops(v[0], v[1], v.size() > 2 ? v[2] : Tensor(), t, opts)};
              },
              in, {g[0]});
          return std::vector<Tensor>{gr[0], gr[1], gr.size() > 2 ? gr[2] : Tensor()};
        }
        Grads out;
        if (opts.reduction != Reduction::None) {
          auto scaled = [&](const Tensor& u) { return u.defined() ? mul(u, g[0]) : Tensor(); };
          out = {scaled(unit.dx), scaled(unit.dw), scaled(unit.db)};
        } else {
          out = empty_grads(want_x, want_w, want_b, N, V, d, x);
          chunk_pass(as_rows(x, N), w, b, t, spec, chunk, Tensor(), slse.unpack(), per_row(g[0], N), out);
        }
        if (out.dx.defined()) out.dx = out.dx.alias(x.sizes(), contiguous_strides(x.sizes()), out.dx.storage_offset());
        return std::vector<Tensor>{out.dx, out.dw, out.db};
      },
      HigherOrder::Supported);
  return out;
}

}  // namespace ks
