// ops/attention_in_ops.h — the fused attention ops restated in differentiable
// ops, forming the score and weight matrices they avoid: what their backwards
// differentiate under create_graph (grad_by_recompute, autograd/engine.h), so
// that the fused kernels support higher-order gradients. Each agrees with its
// fused op (values and gradients), dropout mask included, at O(T·S) memory.
//
//   scaled_dot_product_attention:  matmul (+ ALiBi) → masked_fill → softmax → ·mask → matmul, grouped over
//                                  key/value heads (matmul_kv_heads)
//   mixture_softmax:               scale·s + bias → logsumexp (hard: max) over M → masked_fill → softmax
//   mixture_attention:             matmul → mixture_softmax (above) → ·mask → matmul
//   causal_linear_attention:       tril(φq φkᵀ) @ v + φq S₀, over tril(φq φkᵀ)·1 + φq·z₀ + eps
//
// Not here: the fused ops and their kernels (attention.h, mixture.h,
// mixture_attention.h, linear_attention.h); the modules' own composed paths
// (nn/attention/), which return the weights.
#pragma once

#include <cstdint>

#include "core/tensor.h"
#include "ops/attention.h"

namespace ks {

// True where query i may not see key j: (B, 1, T, S) bool (or (1, 1, T, S)
// without padding), undefined when nothing is hidden. Causal: j > offset + i,
// and with a sliding window (> 0) also j <= offset + i − window;
// key_padding (B, S), true = hidden, or undefined.
Tensor attention_hidden_mask(int64_t B, int64_t T, int64_t S, bool causal, int64_t causal_offset, int64_t window,
                             const Tensor& key_padding, Device device);

// The dropout factor mask/(1 − p) of the weights (`shape`, e.g. (B, h, T, S)),
// drawn as prm says (the same Philox counters as the fused op's); no history.
Tensor attention_dropout_factor(const Shape& shape, DType dtype, Device device, const SdpaParams& prm);

// a (B, h, T, x) times b (B, g, x, S) -> (B, h, T, S), head n of a with head
// n / (h / g) of b (g divides h): grouped-query attention's products, by
// broadcasting over each group (b is not repeated; its gradient sums over
// the group). With g = h, matmul(a, b).
Tensor matmul_kv_heads(const Tensor& a, const Tensor& b);

// ALiBi's biases (1, h, T, S), constant: −m_n·|offset + i − j| for head n of
// h, query i, key j (ops/attention.h; slopes attention_formulas::alibi_slope).
Tensor alibi_bias(int64_t heads, int64_t T, int64_t S, int64_t offset, DType dtype, Device device);

// q (B, h, T, p), k (B, g, S, p), v (B, g, S, e) -> (B, h, T, e), g dividing
// h; prm resolved by the op (ALiBi included).
Tensor scaled_dot_product_attention_in_ops(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& key_padding,
                                           const SdpaParams& prm);

// scores (..., T, M, S), bias broadcastable to (..., M, S), mask broadcastable
// to (..., T, S) or undefined -> the weights A (..., T, S).
Tensor mixture_softmax_in_ops(const Tensor& scores, const Tensor& bias, double scale, const Tensor& mask, bool hard);

// q (B, h, T, p), k (B, h, M, S, p), bias broadcastable to (B, h, M, S), v (B, h, S, e) -> (B, h, T, e).
Tensor mixture_attention_in_ops(const Tensor& q, const Tensor& k, const Tensor& bias, const Tensor& v,
                                const Tensor& key_padding, const SdpaParams& prm, bool hard);

// phi_q, phi_k (B, h, T, p), v (B, h, T, e), state (B, h, p, e) and norm (B, h, p) or both undefined.
Tensor causal_linear_attention_in_ops(const Tensor& phi_q, const Tensor& phi_k, const Tensor& v, const Tensor& state,
                                      const Tensor& norm, double eps);

}  // namespace ks
