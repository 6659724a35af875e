// ops/inplace.cpp — the rules of inplace.h (no history, target keeps its
// shape, dtype checks, overlap, version bump) around the elementwise kernels.
#include "ops/inplace.h"

#include "autograd/grad_mode.h"
#include "core/copy.h"
#include "ops/broadcast.h"
#include "ops/compare.h"
#include "ops/elementwise.h"
#include "ops/unary.h"

namespace ks {

namespace {

void check_target(const char* op, const Tensor& t) {
  KS_CHECK(t.defined(), op, ": undefined tensor");
  KS_CHECK(!(GradMode::is_enabled() && t.requires_grad()), op,
           ": in-place operation on a tensor that requires grad; wrap it in NoGradGuard");
  KS_CHECK(t.is_non_overlapping(), op, ": target ", describe(t), " has overlapping (expanded) elements");
}

// [first, last] element offsets that t touches in its storage.
std::pair<int64_t, int64_t> extent(const Tensor& t) {
  int64_t hi = t.storage_offset();
  for (int64_t d = 0; d < t.dim(); ++d) hi += (t.size(d) - 1) * t.stride(d);
  return {t.storage_offset(), hi};
}

// `o` checked against target t and laid over t's shape. If o reads memory
// that t writes, other than each element reading itself, o is copied first:
// otherwise a parallel or vectorised loop could read already-updated values.
Tensor operand(const char* op, const Tensor& t, const Tensor& o) {
  check_same_kind(op, t, o);
  KS_CHECK(!(GradMode::is_enabled() && o.requires_grad()), op, ": operand ", describe(o),
           " requires grad, but in-place operations record no history; detach it or wrap the update in "
           "NoGradGuard");
  bool fits = o.dim() <= t.dim();
  for (int64_t i = 0; fits && i < o.dim(); ++i) {
    const int64_t s = o.size(i), want = t.size(t.dim() - o.dim() + i);
    fits = s == want || s == 1;
  }
  KS_CHECK(fits, op, ": operand ", describe(o), " cannot be broadcast to the target's shape ", t.sizes(),
           " (in-place ops keep the target's shape)");
  Tensor v = broadcast_raw(o, t.sizes(), op);
  if (t.numel() == 0 || v.impl()->storage != t.impl()->storage) return v;
  if (v.strides() == t.strides() && v.storage_offset() == t.storage_offset()) return v;
  auto [tl, th] = extent(t);
  auto [ol, oh] = extent(o);
  if (oh < tl || th < ol) return v;
  Tensor copy = Tensor::empty(o.sizes(), o.dtype(), o.device());
  copy_(copy, o);
  return broadcast_raw(copy, t.sizes(), op);
}

Tensor done(const Tensor& t) {
  t.bump_version();
  return t;
}

Tensor add_scaled(const char* op, const Tensor& t, const Tensor& other, double alpha) {
  check_target(op, t);
  check_numeric(op, t);
  check_scalar_fits(op, t, alpha);
  Tensor o = operand(op, t, other);
  if (t.numel() > 0) inplace_kernel<binary_ops::AddScaled>(t.device(), alpha, t, o, o);
  return done(t);
}

template <class Kind> Tensor scalar_update(const char* op, const Tensor& t, double s) {
  check_target(op, t);
  check_numeric(op, t);
  check_scalar_fits(op, t, s);
  if (t.numel() > 0) scalar_kernel<Kind>(t.device(), s, t, t);
  return done(t);
}

template <class Kind> Tensor addc(const char* op, const Tensor& t, const Tensor& a, const Tensor& b, double value) {
  check_target(op, t);
  check_floating(op, t);
  Tensor va = operand(op, t, a), vb = operand(op, t, b);
  if (t.numel() > 0) inplace_kernel<Kind>(t.device(), value, t, va, vb);
  return done(t);
}

// t = t (op) other with the out-of-place kernel of Op.
template <class Op> Tensor binary_update(const char* op, const Tensor& t, const Tensor& other) {
  check_target(op, t);
  if (Op::integers)
    check_numeric(op, t);
  else
    check_floating(op, t);
  Tensor o = operand(op, t, other);
  if (t.numel() > 0) binary_kernel<Op>(t.device(), t, t, o);
  return done(t);
}

}  // namespace

Tensor add_(const Tensor& t, const Tensor& other, double alpha) { return add_scaled("add_", t, other, alpha); }
Tensor sub_(const Tensor& t, const Tensor& other, double alpha) { return add_scaled("sub_", t, other, -alpha); }

Tensor mul_(const Tensor& t, const Tensor& other) { return binary_update<binary_ops::Mul>("mul_", t, other); }
Tensor div_(const Tensor& t, const Tensor& other) { return binary_update<binary_ops::Div>("div_", t, other); }

Tensor add_(const Tensor& t, double value) { return scalar_update<binary_ops::AddScalar>("add_", t, value); }
Tensor sub_(const Tensor& t, double value) { return scalar_update<binary_ops::AddScalar>("sub_", t, -value); }
Tensor mul_(const Tensor& t, double value) { return scalar_update<binary_ops::MulScalar>("mul_", t, value); }
Tensor div_(const Tensor& t, double value) {
  KS_CHECK(t.defined(), "div_: undefined tensor");
  check_floating("div_", t);
  return scalar_update<binary_ops::MulScalar>("div_", t, 1.0 / value);
}

Tensor addcmul_(const Tensor& t, const Tensor& a, const Tensor& b, double value) {
  return addc<binary_ops::Addcmul>("addcmul_", t, a, b, value);
}
Tensor addcdiv_(const Tensor& t, const Tensor& a, const Tensor& b, double value) {
  return addc<binary_ops::Addcdiv>("addcdiv_", t, a, b, value);
}

Tensor sqrt_(const Tensor& t) {
  check_target("sqrt_", t);
  check_floating("sqrt_", t);
  if (t.numel() > 0) unary_kernel<unary_ops::Sqrt>(t.device(), UnaryParams{}, t, t);
  return done(t);
}

Tensor clamp_(const Tensor& t, std::optional<double> min, std::optional<double> max) {
  check_target("clamp_", t);
  check_numeric("clamp_", t);
  UnaryParams p = clamp_params("clamp_", t, min, max);
  if (t.numel() > 0) unary_kernel<unary_ops::Clamp>(t.device(), p, t, t);
  return done(t);
}

Tensor masked_fill_(const Tensor& t, const Tensor& mask, double value) {
  check_target("masked_fill_", t);
  KS_CHECK(mask.defined() && mask.dtype() == kBool, "masked_fill_: mask must be a bool tensor, got ", describe(mask));
  KS_CHECK(t.device() == mask.device(), "masked_fill_: device mismatch, ", describe(t), " and mask ", describe(mask));
  check_scalar_fits("masked_fill_", t, value);
  KS_CHECK(t.dtype() != kBool || value == 0 || value == 1, "masked_fill_: value ", value,
           " is not 0 or 1 for a bool tensor");
  KS_CHECK(broadcast_shapes({t.sizes(), mask.sizes()}, "masked_fill_") == t.sizes(), "masked_fill_: mask ",
           describe(mask), " cannot be broadcast to the target's shape ", t.sizes());
  if (t.numel() > 0) masked_fill_kernel(t.device(), t, t, broadcast_raw(mask, t.sizes(), "masked_fill_"), value, true);
  return done(t);
}

Tensor zero_(const Tensor& t) {
  check_target("zero_", t);
  fill_(t, 0.0);  // bumps the version
  return t;
}

}  // namespace ks
