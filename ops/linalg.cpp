// ops/linalg.cpp — matmul and linear: input checks, 1-d promotion, batch
// broadcasting and folding, backward formulas. The GEMM calls are in
// cpu/linalg.cpp; everything here works on views and is device-neutral.
//
// Transposes are never copied here: a transposed view (strides swapped) goes
// to the kernel, which hands it to BLAS with a transpose flag. That is how the
// backward's dA = dC·Bᵀ and dB = Aᵀ·dC run without moving B or A.
#include "ops/linalg.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "autograd/node.h"
#include "core/copy.h"
#include "core/matmul_precision.h"
#include "ops/broadcast.h"
#include "ops/reduce.h"
#include "ops/view.h"

namespace ks {

constinit KernelTable<GemmKernel> gemm_kernel("gemm");
constinit KernelTable<GemmBiasKernel> gemm_bias_kernel("gemm");
constinit KernelTable<LinearBackwardKernel> linear_backward_kernel("linear_backward");

namespace {

Shape batch_of(const Tensor& t) { return Shape(t.sizes().begin(), t.sizes().end() - 2); }

Shape with_matrix(Shape batch, int64_t rows, int64_t cols) {
  batch.push_back(rows);
  batch.push_back(cols);
  return batch;
}

// Raw views (no autograd): the op records its own backward node.
// t with its last two dims swapped.
Tensor mT(const Tensor& t) {
  Shape sizes = t.sizes(), strides = t.strides();
  std::swap(sizes[sizes.size() - 1], sizes[sizes.size() - 2]);
  std::swap(strides[strides.size() - 1], strides[strides.size() - 2]);
  return t.alias(sizes, strides, t.storage_offset());
}
// t with a size-1 dim inserted before position `dim` (0 <= dim <= t.dim()).
Tensor unsqueeze_raw(const Tensor& t, int64_t dim) {
  Shape sizes = t.sizes(), strides = t.strides();
  const int64_t stride = dim < t.dim() ? sizes[size_t(dim)] * strides[size_t(dim)] : 1;
  sizes.insert(sizes.begin() + dim, 1);
  strides.insert(strides.begin() + dim, stride);
  return t.alias(sizes, strides, t.storage_offset());
}

// Product of all dims but the last: the row count of t flattened to a matrix.
int64_t rows_of(const Shape& shape) { return shape.empty() ? 1 : numel_of(Shape(shape.begin(), shape.end() - 1)); }

// The stride that walks dims [0, last] of t as one flattened dim, if their
// strides nest (size-1 dims ignored): the rows of a contiguous (B, T, C)
// tensor fold into one (B*T, C) matrix.
std::optional<int64_t> fold_stride(const Tensor& t, int64_t last) {
  std::optional<int64_t> stride;
  int64_t expected = 0;
  for (int64_t d = last; d >= 0; --d) {
    if (t.size(d) == 1) continue;
    if (!stride) {
      stride = t.stride(d);
    } else if (t.stride(d) != expected) {
      return std::nullopt;
    }
    expected = t.stride(d) * t.size(d);
  }
  return stride.value_or(1);
}

// a (batchA..., M, K) · b (batchB..., K, N) -> (batch..., M, N), batch dims
// broadcast, plus `bias` (broadcasting to the result) when defined. Shapes
// are checked by the caller. No autograd.
Tensor gemm(const Tensor& a, const Tensor& b, const Tensor& bias = Tensor()) {
  const int64_t M = a.size(-2), K = a.size(-1), N = b.size(-1);
  const Shape batch = broadcast_shapes({batch_of(a), batch_of(b)}, "matmul");
  Tensor out = Tensor::empty(with_matrix(batch, M, N), a.dtype(), a.device());
  // A bias row (N,) goes to a device's gemm_bias kernel where it has one;
  // otherwise, and for any other bias shape, it is copied into the output
  // and the product accumulated.
  const bool row_bias = bias.defined() && bias.dim() == 1 && bias.size(0) == N && bias.is_contiguous() &&
                        gemm_bias_kernel.has(out.device().type);
  const bool accumulate = bias.defined() && !row_bias;
  if (accumulate) copy_(out, bias);
  auto run = [&](const Tensor& c, const Tensor& x, const Tensor& y) {
    if (row_bias)
      gemm_bias_kernel(out.device(), c, x, y, bias);
    else
      gemm_kernel(out.device(), c, x, y, accumulate);
  };
  // When b has no batch of its own, a's batch and row dims may fold into one
  // row dim: (B, T, C) · (C, N) becomes a single (B*T, C) · (C, N) GEMM.
  if (!batch.empty() && numel_of(batch_of(b)) == 1) {
    if (std::optional<int64_t> row_stride = fold_stride(a, a.dim() - 2)) {
      const int64_t rows = numel_of(batch) * M;
      run(out.alias({rows, N}, {N, 1}, 0), a.alias({rows, K}, {*row_stride, a.stride(-1)}, a.storage_offset()),
          b.alias({K, N}, {b.stride(-2), b.stride(-1)}, b.storage_offset()));
      return out;
    }
  }
  run(out, broadcast_raw(a, with_matrix(batch, M, K), "matmul"), broadcast_raw(b, with_matrix(batch, K, N), "matmul"));
  return out;
}

// x rounded to bfloat16 by a differentiable cast, so that create_graph's
// products still reach x; shared within a SharedLinearInput scope.
Tensor bf16_input_copy(const Tensor& x) {
  SharedLinearInput* scope = SharedLinearInput::current();
  if (scope)
    if (Tensor copy = scope->find(x); copy.defined()) return copy;
  Tensor copy = to(x, kBFloat16);
  if (scope) scope->keep(x, copy);
  return copy;
}

void check_pair(const char* op, const Tensor& a, const Tensor& b) {
  KS_CHECK(a.dtype() == b.dtype(), op, ": dtype mismatch, ", describe(a), " and ", describe(b));
  KS_CHECK(is_floating(a.dtype()), op, ": expected floating tensors (float32, float64, bfloat16, float16), got ",
           describe(a), " and ", describe(b));
  KS_CHECK(a.device() == b.device(), op, ": device mismatch, ", describe(a), " and ", describe(b));
}

thread_local SharedLinearInput* innermost_scope = nullptr;

}  // namespace

// Linear's backward reads x in dW = gᵀ·x (fused or composed) and in
// create_graph's matmul, each rounding it to bf16 first: on the CPU where it
// has a bf16 kernel (without one the GEMMs compute in float32,
// core/matmul_precision.h, and x is saved as it is), on CUDA always (cuBLAS
// gets bf16 copies of both operands, ops/cuda/linalg.cpp). A leaf x (a
// parameter, a batch) is saved as it is: its caller holds it anyway, and a
// copy would add bytes instead of freeing them.
bool saves_input_in_bf16(const Tensor& x) {
  if (x.dtype() != kFloat32 || x.grad_fn() == nullptr) return false;
  if (x.device().is_cpu()) return cpu_matmul_precision() == MatmulPrecision::BFloat16;
  return x.device().is_cuda() && matmul_precision() == MatmulPrecision::BFloat16;
}

Tensor input_saved_for_backward(const Tensor& x) { return saves_input_in_bf16(x) ? to(x, kBFloat16) : x; }

Tensor widened_saved_input(const Tensor& saved, DType dtype) {
  return saved.dtype() == dtype ? saved : to(saved, dtype);
}

SharedLinearInput::SharedLinearInput() : outer_(innermost_scope) { innermost_scope = this; }
SharedLinearInput::~SharedLinearInput() { innermost_scope = outer_; }
SharedLinearInput* SharedLinearInput::current() { return innermost_scope; }

Tensor SharedLinearInput::find(const Tensor& x) const {
  return x.impl_ptr().get() == x_ && x.version() == version_ ? copy_ : Tensor();
}

void SharedLinearInput::keep(const Tensor& x, const Tensor& copy) {
  x_ = x.impl_ptr().get();
  x_holder_ = x;
  copy_ = copy;
  version_ = x.version();
}

Tensor matmul(const Tensor& a, const Tensor& b) {
  KS_CHECK(a.defined() && b.defined(), "matmul: undefined input");
  KS_CHECK(a.dim() >= 1 && b.dim() >= 1, "matmul: both arguments must be at least 1-d, got ", describe(a), " and ",
           describe(b));
  check_pair("matmul", a, b);
  const bool pa = a.dim() == 1, pb = b.dim() == 1;  // promoted 1-d operands
  const Tensor a2 = pa ? unsqueeze_raw(a, 0) : a;   // (1, K)
  const Tensor b2 = pb ? unsqueeze_raw(b, 1) : b;   // (K, 1)
  KS_CHECK(a2.size(-1) == b2.size(-2), "matmul: shapes ", a.sizes(), " and ", b.sizes(), " cannot be multiplied (",
           a2.size(-1), " vs ", b2.size(-2), ")");
  const Shape batch_a = batch_of(a2), batch_b = batch_of(b2);
  for (size_t i = 1; i <= std::min(batch_a.size(), batch_b.size()); ++i) {
    const int64_t x = batch_a[batch_a.size() - i], y = batch_b[batch_b.size() - i];
    KS_CHECK(x == y || x == 1 || y == 1, "matmul: batch dims of ", a.sizes(), " and ", b.sizes(),
             " cannot be broadcast (", batch_a, " vs ", batch_b, ")");
  }

  Tensor out = gemm(a2, b2);  // (batch..., M, N)
  if (pa || pb) {
    Shape shape = batch_of(out);
    if (!pa) shape.push_back(out.size(-2));
    if (!pb) shape.push_back(out.size(-1));
    out = out.alias(shape, contiguous_strides(shape), 0);
  }

  if (needs_grad({a, b})) {
    const bool ga = a.requires_grad(), gb = b.requires_grad();
    // dA needs B and dB needs A: keep each only if the other's gradient is wanted.
    record(
        "MatmulBackward", {a, b}, {out},
        [sa = SavedTensor(gb ? a : Tensor()), sb = SavedTensor(ga ? b : Tensor()), pa, pb, shape_a = a.sizes(),
         shape_b = b.sizes(), shape_a2 = a2.sizes(), shape_b2 = b2.sizes()](const std::vector<Tensor>& grads) {
          Tensor g = grads[0];  // (batch..., [M], [N]) -> (batch..., M, N)
          Tensor da, db;
          if (GradMode::is_enabled()) {  // create_graph: the same products as differentiable ops
            if (pa) g = unsqueeze(g, g.dim() - (pb ? 0 : 1));
            if (pb) g = unsqueeze(g, g.dim());
            if (sb.defined()) {
              const Tensor b2 = pb ? unsqueeze(sb.unpack(), 1) : sb.unpack();
              da = reshape(sum_to(matmul(g, transpose(b2, -1, -2)), shape_a2), shape_a);
            }
            if (sa.defined()) {
              const Tensor a2 = pa ? unsqueeze(sa.unpack(), 0) : sa.unpack();
              db = reshape(sum_to(matmul(transpose(a2, -1, -2), g), shape_b2), shape_b);
            }
            return std::vector<Tensor>{da, db};
          }
          if (pa) g = unsqueeze_raw(g, g.dim() - (pb ? 0 : 1));
          if (pb) g = unsqueeze_raw(g, g.dim());
          if (sb.defined()) {
            const Tensor b2 = pb ? unsqueeze_raw(sb.unpack(), 1) : sb.unpack();
            da = reshape(sum_to(gemm(g, mT(b2)), shape_a2), shape_a);  // dC·Bᵀ
          }
          if (sa.defined()) {
            const Tensor a2 = pa ? unsqueeze_raw(sa.unpack(), 0) : sa.unpack();
            if (g.dim() > 2 && numel_of(Shape(shape_b2.begin(), shape_b2.end() - 2)) == 1) {
              // B was shared by the whole batch: one GEMM over all rows, Aᵀ·dC.
              const int64_t rows = rows_of(a2.sizes());
              db = gemm(mT(reshape(a2, {rows, a2.size(-1)})), reshape(g, {rows, g.size(-1)}));
            } else {
              db = sum_to(gemm(mT(a2), g), shape_b2);
            }
            db = reshape(db, shape_b);
          }
          return std::vector<Tensor>{da, db};
        },
        HigherOrder::Supported);
  }
  return out;
}

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  KS_CHECK(x.defined() && weight.defined(), "linear: undefined input");
  check_pair("linear", x, weight);
  KS_CHECK(weight.dim() == 2, "linear: weight must be 2-d (out_features, in_features), got ", describe(weight));
  KS_CHECK(x.dim() >= 1, "linear: input must be at least 1-d, got ", describe(x));
  const int64_t in = weight.size(1), out_features = weight.size(0);
  KS_CHECK(x.size(-1) == in, "linear: input ", describe(x), " does not fit weight ", describe(weight), " (", x.size(-1),
           " vs ", in, " in_features)");
  if (bias.defined()) {
    check_pair("linear", x, bias);
    KS_CHECK(bias.sizes() == Shape{out_features}, "linear: bias must have shape [", out_features, "], got ",
             describe(bias));
  }

  const bool px = x.dim() == 1;
  Tensor out = gemm(px ? unsqueeze_raw(x, 0) : x, mT(weight), bias);  // (..., out)
  if (px) out = out.alias({out_features}, {1}, 0);

  if (needs_grad({x, weight, bias})) {
    const bool gx = x.requires_grad(), gw = weight.requires_grad();
    const Tensor x_saved = !gw ? Tensor() : saves_input_in_bf16(x) ? bf16_input_copy(x) : x;
    record(
        "LinearBackward", {x, weight, bias}, {out},
        [sx = SavedTensor(x_saved), sw = SavedTensor(gx ? weight : Tensor()),
         gb = bias.defined() && bias.requires_grad(), shape_x = x.sizes(), in,
         out_features](const std::vector<Tensor>& grads) {
          const int64_t rows = rows_of(shape_x);  // all leading dims of x
          const Tensor g = reshape(grads[0], {rows, out_features});
          Tensor dx, dw, db;
          if (GradMode::is_enabled()) {  // create_graph: the same products as differentiable ops
            if (sw.defined()) dx = reshape(matmul(g, sw.unpack()), shape_x);
            if (sx.defined()) dw = matmul(transpose(g, 0, 1), reshape(to(sx.unpack(), g.dtype()), {rows, in}));
            if (gb) db = sum(g, {0});
            return std::vector<Tensor>{dx, dw, db};
          }
          const Tensor x2 = sx.defined() ? reshape(sx.unpack(), {rows, in}) : Tensor();  // (rows, in)
          if (x2.defined() && linear_backward_kernel.has(g.device().type)) {
            const Tensor w = sw.defined() ? sw.unpack() : Tensor();
            if (linear_backward_kernel(g.device(), g, x2, w, sw.defined(), gb, dx, dw, db)) {
              if (dx.defined()) dx = reshape(dx, shape_x);
              return std::vector<Tensor>{dx, dw, db};
            }
          }
          if (sw.defined()) dx = reshape(gemm(g, sw.unpack()), shape_x);           // g·W
          if (x2.defined()) dw = gemm(mT(g), to_raw(x2, x2.device(), g.dtype()));  // gᵀ·x (x widened if saved in bf16)
          if (gb) db = sum(g, {0});
          return std::vector<Tensor>{dx, dw, db};
        },
        HigherOrder::Supported);
  }
  return out;
}

}  // namespace ks
