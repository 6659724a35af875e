// ops/through_float32.h — bfloat16 and float16 for the kernels written for
// float32 and float64 (softmax, the norms, the losses, rope, the mixture
// softmax, the fused attentions, the index adds, cumsum), on the CPU and on
// CUDA alike: the
// 16-bit inputs are widened to float32 copies (exactly), the float32 kernel
// runs, and each 16-bit output is rounded once from its float32 result. That
// is the contract of every 16-bit op (core/dtype.h: computed in float32,
// rounded once), at the price of one copy per operand; a kernel that widens
// as it loads (the elementwise ones, ops/kernel_dtypes.h) saves it.
//
// Each backend registers a kernel K through its adapter here, so that the
// adaptation is written once for both:
//   KS_REGISTER_KERNEL(softmax_kernel, CPU, through_float32::softmax<softmax_cpu>);
// The adapter calls K itself where no tensor is 16-bit. Statistics a kernel
// keeps wide (an attention's log-sum-exp, layer_norm's mean and rstd, a
// loss's denominator) are made wide by the op (ops/*.cpp) and pass as they are.
// Not here: the kernels themselves.
#pragma once

#include "core/copy.h"
#include "core/tensor.h"
#include "ops/attention.h"
#include "ops/indexing.h"
#include "ops/layer_norm.h"
#include "ops/linear_attention.h"
#include "ops/loss.h"
#include "ops/mixture.h"
#include "ops/mixture_attention.h"
#include "ops/rms_norm.h"
#include "ops/rope.h"
#include "ops/scan.h"
#include "ops/softmax.h"

namespace ks {

inline bool is_16bit(const Tensor& t) { return t.defined() && is_16bit(t.dtype()); }

// t as float32 when it is 16-bit (a widened copy), else t itself (undefined stays undefined).
inline Tensor as_float32(const Tensor& t) { return is_16bit(t) ? to_raw(t, t.device(), DType::Float32) : t; }

// A float32 stand-in for a 16-bit output, written back (rounded once) by
// store(); any other output is its own. `reads`: the kernel also reads the
// target (it adds into it), so the stand-in starts as its widened copy.
struct Float32Out {
  Tensor target, f32;
  explicit Float32Out(const Tensor& t, bool reads = false)
      : target(t),
        f32(!is_16bit(t) ? t
            : reads      ? as_float32(t)
                         : Tensor::empty(t.sizes(), DType::Float32, t.device())) {}
  void store() const {
    if (is_16bit(target)) copy_(target, f32);
  }
};

namespace through_float32 {

template <SoftmaxKernel* K> void softmax(bool log, const Tensor& out, const Tensor& x, int64_t dim) {
  if (!is_16bit(out)) return K(log, out, x, dim);
  const Float32Out o(out);
  K(log, o.f32, as_float32(x), dim);
  o.store();
}

template <SoftmaxBackwardKernel* K>
void softmax_backward(bool log, const Tensor& dx, const Tensor& g, const Tensor& y, int64_t dim) {
  if (!is_16bit(dx)) return K(log, dx, g, y, dim);
  const Float32Out d(dx);
  K(log, d.f32, as_float32(g), as_float32(y), dim);
  d.store();
}

template <LayerNormKernel* K>
void layer_norm(const Tensor& y, const Tensor& mean, const Tensor& rstd, const Tensor& x, const Tensor& w,
                const Tensor& b, double eps) {
  if (!is_16bit(y)) return K(y, mean, rstd, x, w, b, eps);
  const Float32Out o(y);
  K(o.f32, mean, rstd, as_float32(x), as_float32(w), as_float32(b), eps);
  o.store();
}

template <LayerNormBackwardKernel* K>
void layer_norm_backward(const Tensor& dx, const Tensor& dw, const Tensor& db, const Tensor& g, const Tensor& x,
                         const Tensor& mean, const Tensor& rstd, const Tensor& w) {
  if (!is_16bit(g)) return K(dx, dw, db, g, x, mean, rstd, w);
  const Float32Out ddx(dx), ddw(dw), ddb(db);
  K(ddx.f32, ddw.f32, ddb.f32, as_float32(g), as_float32(x), mean, rstd, as_float32(w));
  ddx.store(), ddw.store(), ddb.store();
}

template <RmsNormKernel* K>
void rms_norm(const Tensor& y, const Tensor& rstd, const Tensor& x, const Tensor& w, const Tensor& b, double eps) {
  if (!is_16bit(y)) return K(y, rstd, x, w, b, eps);
  const Float32Out o(y);
  K(o.f32, rstd, as_float32(x), as_float32(w), as_float32(b), eps);
  o.store();
}

template <RmsNormBackwardKernel* K>
void rms_norm_backward(const Tensor& dx, const Tensor& dw, const Tensor& db, const Tensor& g, const Tensor& x,
                       const Tensor& rstd, const Tensor& w) {
  if (!is_16bit(g)) return K(dx, dw, db, g, x, rstd, w);
  const Float32Out ddx(dx), ddw(dw), ddb(db);
  K(ddx.f32, ddw.f32, ddb.f32, as_float32(g), as_float32(x), rstd, as_float32(w));
  ddx.store(), ddw.store(), ddb.store();
}

template <ClassLossKernel* K>
void class_loss(const Tensor& loss, const Tensor& lse, const Tensor& denom, const Tensor& x, const Tensor& targets,
                const ClassLossSpec& spec) {
  if (!is_16bit(x)) return K(loss, lse, denom, x, targets, spec);
  const Float32Out l(loss), s(lse);
  K(l.f32, s.f32, denom, as_float32(x), targets, spec);
  l.store(), s.store();
}

template <ClassLossBackwardKernel* K>
void class_loss_backward(const Tensor& dx, const Tensor& gpos, const Tensor& x, const Tensor& lse,
                         const Tensor& targets, const ClassLossSpec& spec) {
  if (!is_16bit(dx)) return K(dx, gpos, x, lse, targets, spec);
  const Float32Out d(dx);
  K(d.f32, as_float32(gpos), as_float32(x), as_float32(lse), targets, spec);
  d.store();
}

template <MseKernel* K> void mse(const Tensor& out, const Tensor& a, const Tensor& b, bool reduce, double scale) {
  if (!is_16bit(a)) return K(out, a, b, reduce, scale);
  const Float32Out o(out);
  K(o.f32, as_float32(a), as_float32(b), reduce, scale);
  o.store();
}

template <MseBackwardKernel* K>
void mse_backward(const Tensor& da, const Tensor& db, const Tensor& a, const Tensor& b, const Tensor& g, double scale) {
  if (!is_16bit(a)) return K(da, db, a, b, g, scale);
  const Float32Out x(da), y(db);
  K(x.f32, y.f32, as_float32(a), as_float32(b), as_float32(g), scale);
  x.store(), y.store();
}

template <RopeKernel* K>
void rope(const Tensor& out, const Tensor& x, const Tensor& positions, const RopeGeometry& geometry) {
  if (!is_16bit(x)) return K(out, x, positions, geometry);
  const Float32Out o(out);
  K(o.f32, as_float32(x), positions, geometry);
  o.store();
}

template <MixtureSoftmaxKernel* K>
void mixture_softmax(const Tensor& weights, const Tensor& resp, const Tensor& scores, const Tensor& bias,
                     const Tensor& mask, double scale, bool hard) {
  if (!is_16bit(scores)) return K(weights, resp, scores, bias, mask, scale, hard);
  const Float32Out w(weights), r(resp);
  K(w.f32, r.f32, as_float32(scores), as_float32(bias), mask, scale, hard);
  w.store(), r.store();
}

template <MixtureSoftmaxBackwardKernel* K>
void mixture_softmax_backward(const Tensor& dscores, const Tensor& dbias, const Tensor& g, const Tensor& weights,
                              const Tensor& scores, const Tensor& bias, double scale, bool hard) {
  if (!is_16bit(scores)) return K(dscores, dbias, g, weights, scores, bias, scale, hard);
  const Float32Out ds(dscores), db(dbias);
  K(ds.f32, db.f32, as_float32(g), as_float32(weights), as_float32(scores), as_float32(bias), scale, hard);
  ds.store(), db.store();
}

template <SdpaForwardKernel* K>
void sdpa_forward(const Tensor& out, const Tensor& lse, const Tensor& q, const Tensor& k, const Tensor& v,
                  const Tensor& key_padding, const SdpaParams& prm) {
  if (!is_16bit(q)) return K(out, lse, q, k, v, key_padding, prm);
  const Float32Out o(out);
  K(o.f32, lse, as_float32(q), as_float32(k), as_float32(v), key_padding, prm);
  o.store();
}

template <SdpaBackwardKernel* K>
void sdpa_backward(const Tensor& dq, const Tensor& dk, const Tensor& dv, const Tensor& g, const Tensor& q,
                   const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse, const Tensor& key_padding,
                   const SdpaParams& prm) {
  if (!is_16bit(g)) return K(dq, dk, dv, g, q, k, v, out, lse, key_padding, prm);
  const Float32Out a(dq), b(dk), c(dv);
  K(a.f32, b.f32, c.f32, as_float32(g), as_float32(q), as_float32(k), as_float32(v), as_float32(out), lse, key_padding,
    prm);
  a.store(), b.store(), c.store();
}

template <MixtureAttentionForwardKernel* K>
void mixture_attention_forward(const Tensor& out, const Tensor& lse, const Tensor& totals, const Tensor& q,
                               const Tensor& k, const Tensor& bias, const Tensor& v, const Tensor& key_padding,
                               const SdpaParams& prm, bool hard) {
  if (!is_16bit(q)) return K(out, lse, totals, q, k, bias, v, key_padding, prm, hard);
  const Float32Out o(out);
  K(o.f32, lse, totals, as_float32(q), as_float32(k), as_float32(bias), as_float32(v), key_padding, prm, hard);
  o.store();
}

template <MixtureAttentionBackwardKernel* K>
void mixture_attention_backward(const Tensor& dq, const Tensor& dk, const Tensor& dbias, const Tensor& dv,
                                const Tensor& g, const Tensor& q, const Tensor& k, const Tensor& bias, const Tensor& v,
                                const Tensor& out, const Tensor& lse, const Tensor& key_padding, const SdpaParams& prm,
                                bool hard) {
  if (!is_16bit(g)) return K(dq, dk, dbias, dv, g, q, k, bias, v, out, lse, key_padding, prm, hard);
  const Float32Out a(dq), b(dk), c(dbias), d(dv);
  K(a.f32, b.f32, c.f32, d.f32, as_float32(g), as_float32(q), as_float32(k), as_float32(bias), as_float32(v),
    as_float32(out), lse, key_padding, prm, hard);
  a.store(), b.store(), c.store(), d.store();
}

template <CausalLinearAttentionKernel* K>
void causal_linear_attention(const Tensor& out, const Tensor& phi_q, const Tensor& phi_k, const Tensor& v,
                             const Tensor& state, const Tensor& norm, double eps) {
  if (!is_16bit(phi_q)) return K(out, phi_q, phi_k, v, state, norm, eps);
  const Float32Out o(out);
  K(o.f32, as_float32(phi_q), as_float32(phi_k), as_float32(v), as_float32(state), as_float32(norm), eps);
  o.store();
}

// The gradients not wanted stay undefined.
template <CausalLinearAttentionBackwardKernel* K>
void causal_linear_attention_backward(const Tensor& dq, const Tensor& dk, const Tensor& dv, const Tensor& dstate,
                                      const Tensor& dnorm, const Tensor& g, const Tensor& phi_q, const Tensor& phi_k,
                                      const Tensor& v, const Tensor& state, const Tensor& norm, double eps) {
  if (!is_16bit(g)) return K(dq, dk, dv, dstate, dnorm, g, phi_q, phi_k, v, state, norm, eps);
  const Float32Out a(dq), b(dk), c(dv), d(dstate), e(dnorm);
  K(a.f32, b.f32, c.f32, d.f32, e.f32, as_float32(g), as_float32(phi_q), as_float32(phi_k), as_float32(v),
    as_float32(state), as_float32(norm), eps);
  a.store(), b.store(), c.store(), d.store(), e.store();
}

// index_add and scatter_add: added in float32 into the widened target, rounded once.
template <IndexAddKernel* K> void index_add(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src) {
  if (!is_16bit(out)) return K(out, dim, index, src);
  const Float32Out o(out, /*reads=*/true);
  K(o.f32, dim, index, as_float32(src));
  o.store();
}

template <ScatterAddKernel* K>
void scatter_add(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src) {
  if (!is_16bit(out)) return K(out, dim, index, src);
  const Float32Out o(out, /*reads=*/true);
  K(o.f32, dim, index, as_float32(src));
  o.store();
}

template <CumsumKernel* K> void cumsum(const Tensor& out, const Tensor& x, int64_t dim, bool reverse) {
  if (!is_16bit(out)) return K(out, x, dim, reverse);
  const Float32Out o(out);
  K(o.f32, as_float32(x), dim, reverse);
  o.store();
}

}  // namespace through_float32
}  // namespace ks
