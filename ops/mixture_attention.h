// ops/mixture_attention.h — fused attention over a mixture of keys (MGK,
// Nguyen et al.) that never forms the (B, h, T, M, S) scores or the
// (B, h, T, S) weights in memory: ops/attention.h's FlashAttention-2 tiles
// with mixture_softmax's (ops/mixture.h) log-sum-exp over the M keys of each
// position folded into every score tile.
//
//   x_irj = scale · q_i·k_jr + bias_rj                 (B, h, T, M, S), per tile only
//   ℓ_ij  = log Σ_r exp(x_irj)                         hard: max_r x_irj
//   A_ij  = exp(ℓ_ij) / Σ_j' exp(ℓ_ij')                over the visible j'
//   out   = dropout(A, p) @ v
//
//   q (B, h, T, p), k (B, h, M, S, p), bias broadcastable to (B, h, M, S)
//   (e.g. (1, h, M, S) or a stride-0 expand), v (B, h, S, e)
//   ->  out (B, h, T, e), contiguous
//
// bias is the caller's: log π_r − ‖k_jr‖²/2σ² for MGK. One dtype and device
// throughout, any strides; bfloat16 and float16 as scaled_dot_product_attention
// takes them (in float32 on the CPU, results rounded once). The mask and dropout options
// mean what they mean for scaled_dot_product_attention (SdpaOptions): causal
// with causal_offset, key_padding (B, S), and a dropout mask that is exactly
// dropout(A (B, h, T, S), p, training, gen)'s, so this op and the composed
// matmul → mixture_softmax → dropout → matmul agree mask for mask. A query
// that sees no key gives a row of zeros and zero gradient, never NaN.
//
// Forward keeps, per query row, a running max m of max_r x over the visible
// keys (from -inf; ℓ ≤ max_r x + log M, so exp(ℓ − m) ≤ M never overflows)
// and a running sum l of exp(ℓ − m) = Σ_r exp(x_r − m); it saves q, k, bias,
// v, out and lse = m + log l (B, h, T) (-inf for a row that sees nothing).
// Backward recomputes each tile. With P_r = γ_r·A = exp(x_r − lse) (hard:
// exp(x_r − lse) at the first argmax r, 0 elsewhere) and A = Σ_r P_r:
//   D_i = rowsum(dO∘O);  dA = f∘(dO vᵀ) (f = dropout factor);  dV = (A∘f)ᵀ dO
//   dx_r = γ_r·dℓ = P_r∘(dA − D);  dq += scale Σ_r dx_r k_r;  dk_r += scale dx_rᵀ q
//   dbias_r = Σ_i dx_r (then summed to bias's shape).
// Under create_graph the backward instead differentiates the op's composition
// in ops (ops/attention_in_ops.h), which forms the (T, M, S) scores.
//
// totals (soft-E, when asked for): Σ_i Σ_j γ_irj over the visible (i, j) per
// (B, h, M), no history — the posterior responsibility totals MGK's soft-E
// step averages, γ_r = exp(x_r − max_r x)/Σ_r' exp(x_r' − max_r x) (hard: 1
// at the first argmax), accumulated on the fly in double.
// Not here: the projections, ‖k‖² and log π, returning the weights (the
// module composes mixture_softmax for that). Kernels: ops/cpu/ and
// ops/cuda/mixture_attention.*, formulas in ops/mixture_attention_formulas.h.
#pragma once

#include <cstdint>

#include "core/dispatch.h"
#include "core/random.h"
#include "core/tensor.h"
#include "ops/attention.h"

namespace ks {

struct MixtureAttentionOptions {
  double scale = 0;     // <= 0: 1/√p
  bool hard = false;    // max over the components instead of log-sum-exp
  bool totals = false;  // also return the responsibility totals (B, h, M)
  bool causal = false;
  int64_t causal_offset = 0;  // query i sees key j iff j <= causal_offset + i
  Tensor key_padding{};       // (B, S) bool, true = hidden; or undefined
  double dropout_p = 0;       // in [0, 1]
  bool training = false;
  Generator* gen = nullptr;  // null: the global generator
};

struct MixtureAttention {
  Tensor out;     // (B, h, T, e), differentiable
  Tensor totals;  // (B, h, M), no history; undefined unless asked for
};

MixtureAttention mixture_attention(const Tensor& q, const Tensor& k, const Tensor& bias, const Tensor& v,
                                   const MixtureAttentionOptions& opt = {});

// --- kernels ---
// prm as for scaled_dot_product_attention (scale, mask, dropout), resolved by
// the op. out (B, h, T, e), lse (B, h, T): contiguous, of q's dtype (lse and
// totals float32 for a 16-bit q); totals (B, h, M) contiguous or undefined
// (not wanted). q, k, v any strides; bias a
// (B, h, M, S) view, any strides (0 included); key_padding (B, S) bool any
// strides, or undefined.
using MixtureAttentionForwardKernel = void(const Tensor& out, const Tensor& lse, const Tensor& totals, const Tensor& q,
                                           const Tensor& k, const Tensor& bias, const Tensor& v,
                                           const Tensor& key_padding, const SdpaParams& prm, bool hard);
extern KernelTable<MixtureAttentionForwardKernel> mixture_attention_forward_kernel;
// dq, dk, dv contiguous, shaped like q, k, v; dbias (B, h, M, S) contiguous
// (every one defined); g (B, h, T, e) any strides; out and lse as the forward
// wrote them; the rest as for the forward.
using MixtureAttentionBackwardKernel = void(const Tensor& dq, const Tensor& dk, const Tensor& dbias, const Tensor& dv,
                                            const Tensor& g, const Tensor& q, const Tensor& k, const Tensor& bias,
                                            const Tensor& v, const Tensor& out, const Tensor& lse,
                                            const Tensor& key_padding, const SdpaParams& prm, bool hard);
extern KernelTable<MixtureAttentionBackwardKernel> mixture_attention_backward_kernel;

}  // namespace ks
