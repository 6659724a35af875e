// ops/attention_in_ops.cpp — the fused attention ops as compositions of
// differentiable ops (see the header). Masked scores are set to -inf before
// the softmax, which gives a row that sees nothing zeros, as the kernels do.
#include "ops/attention_in_ops.h"

#include <cmath>

#include "core/factory.h"
#include "ops/attention_formulas.h"
#include "ops/compare.h"
#include "ops/dropout.h"
#include "ops/elementwise.h"
#include "ops/linalg.h"
#include "ops/reduce.h"
#include "ops/shape.h"
#include "ops/softmax.h"
#include "ops/view.h"

namespace ks {

Tensor attention_hidden_mask(int64_t B, int64_t T, int64_t S, bool causal, int64_t causal_offset, int64_t window,
                             const Tensor& key_padding, Device device) {
  Tensor out;
  if (causal) {
    Tensor j = unsqueeze(arange(double(S), {.dtype = kInt64, .device = device}), 0);  // (1, S)
    Tensor i = unsqueeze(arange(double(T), {.dtype = kInt64, .device = device}), 1);  // (T, 1)
    out = view(gt(sub(j, i), double(causal_offset)), {1, 1, T, S});
    if (window > 0)  // the sliding window: j <= causal_offset + i − window is hidden too
      out = logical_or(out, view(le(sub(j, i), double(causal_offset - window)), {1, 1, T, S}));
  }
  if (key_padding.defined()) {
    Tensor pad = view(key_padding, {B, 1, 1, S});
    out = out.defined() ? logical_or(out, pad) : pad;
  }
  return out;
}

Tensor attention_dropout_factor(const Shape& shape, DType dtype, Device device, const SdpaParams& prm) {
  Tensor factor = Tensor::empty(shape, dtype, device), mask = Tensor::empty(shape, kBool, device);
  Tensor one = expand(ones({}, {.dtype = dtype, .device = device}), shape);
  dropout_kernel(device, factor, mask, one, prm.keep, prm.drop_scale, prm.seed, prm.first_block);
  return factor;
}

Tensor matmul_kv_heads(const Tensor& a, const Tensor& b) {
  const int64_t B = a.size(0), h = a.size(1), g = b.size(1);
  if (g == h) return matmul(a, b);
  KS_CHECK(g > 0 && h % g == 0, "matmul_kv_heads: ", g, " key/value heads do not divide ", h, " heads");
  Tensor grouped = reshape(a, {B, g, h / g, a.size(2), a.size(3)});  // (B, g, group, T, x)
  Tensor out = matmul(grouped, unsqueeze(b, 2));                     // (B, g, group, T, S)
  return reshape(out, {B, h, a.size(2), b.size(3)});
}

Tensor alibi_bias(int64_t heads, int64_t T, int64_t S, int64_t offset, DType dtype, Device device) {
  Tensor bias = Tensor::empty({1, heads, T, S}, kFloat64, Device::cpu());
  double* p = bias.data<double>();
  for (int64_t n = 0; n < heads; ++n) {
    const double m = attention_formulas::alibi_slope(n, heads);
    for (int64_t i = 0; i < T; ++i)
      for (int64_t j = 0; j < S; ++j) *p++ = -m * double(attention_formulas::alibi_distance(offset + i, j));
  }
  return to(to(bias, dtype), device);
}

namespace {

// The weights (B, h, T, S) after dropout, times v (B, g, S, e).
Tensor weighted_values(Tensor weights, const Tensor& v, const SdpaParams& prm) {
  if (prm.dropout)
    weights = mul(weights, attention_dropout_factor(weights.sizes(), weights.dtype(), weights.device(), prm));
  return matmul_kv_heads(weights, v);
}

}  // namespace

Tensor scaled_dot_product_attention_in_ops(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& key_padding,
                                           const SdpaParams& prm) {
  Tensor s = mul(matmul_kv_heads(q, transpose(k, -1, -2)), prm.scale);
  if (prm.alibi) s = add(s, alibi_bias(q.size(1), q.size(2), k.size(2), prm.causal_offset, s.dtype(), s.device()));
  Tensor hidden = attention_hidden_mask(q.size(0), q.size(2), k.size(2), prm.causal, prm.causal_offset, prm.window,
                                        key_padding, q.device());
  if (hidden.defined()) s = masked_fill(s, hidden, -INFINITY);
  return weighted_values(softmax(s, -1), v, prm);
}

Tensor mixture_softmax_in_ops(const Tensor& scores, const Tensor& bias, double scale, const Tensor& mask, bool hard) {
  Tensor x = add(mul(scores, scale), unsqueeze(bias, -3));   // (..., T, M, S)
  Tensor l = hard ? max(x, -2).values : logsumexp(x, {-2});  // (..., T, S); hard: the first argmax's
  if (mask.defined()) l = masked_fill(l, mask, -INFINITY);
  return softmax(l, -1);
}

Tensor mixture_attention_in_ops(const Tensor& q, const Tensor& k, const Tensor& bias, const Tensor& v,
                                const Tensor& key_padding, const SdpaParams& prm, bool hard) {
  const int64_t B = q.size(0), H = q.size(1), T = q.size(2), P = q.size(3), M = k.size(2), S = k.size(3);
  Tensor scores = reshape(matmul(q, transpose(reshape(k, {B, H, M * S, P}), -1, -2)), {B, H, T, M, S});
  Tensor hidden = attention_hidden_mask(B, T, S, prm.causal, prm.causal_offset, 0, key_padding, q.device());
  return weighted_values(mixture_softmax_in_ops(scores, bias, prm.scale, hidden, hard), v, prm);
}

Tensor causal_linear_attention_in_ops(const Tensor& phi_q, const Tensor& phi_k, const Tensor& v, const Tensor& state,
                                      const Tensor& norm, double eps) {
  Tensor a = tril(matmul(phi_q, transpose(phi_k, -1, -2)));  // (B, h, T, T): φq_i·φk_j for j <= i
  Tensor num = matmul(a, v);                                 // Σ_{j <= i} (φq_i·φk_j) v_j
  Tensor den = sum(a, {-1}, true);                           // φq_i·Σ_{j <= i} φk_j
  if (state.defined()) {
    num = add(num, matmul(phi_q, state));
    den = add(den, matmul(phi_q, unsqueeze(norm, -1)));
  }
  return div(num, add(den, eps));
}

}  // namespace ks
