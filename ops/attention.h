// ops/attention.h — fused scaled-dot-product (softmax) attention that never
// forms the (T, S) score matrix in memory (FlashAttention-2 style).
//
//   out = dropout(softmax(q kᵀ · scale + alibi + mask), p) @ v
//
//   q (B, h, T, p), k (B, g, S, p), v (B, g, S, e)  ->  out (B, h, T, e), contiguous
//
// g (key/value heads) divides h: query head n attends with key/value head
// n / (h / g) (grouped-query attention; g = 1 multi-query, g = h the plain
// multi-head form). K and V are read where they lie, never repeated; the
// backward sums dK and dV over each group's h / g query heads.
// One dtype and device throughout; any strides (stride-0 expanded inputs
// included). bfloat16 and float16 compute in float32 (widened copies, on
// either device), each result rounded once. Options (SdpaOptions):
//   scale          <= 0 means 1/√p.
//   causal         query i sees key j only if j <= causal_offset + i
//                  (causal_offset: the keys a decoding cache held before;
//                  query i stands at absolute position causal_offset + i).
//   window         > 0, with causal: a sliding window (Mistral's): query i
//                  also stops seeing key j once j <= causal_offset + i −
//                  window, so it sees the `window` keys up to and including
//                  its own position. The kernels skip the key tiles before it.
//   alibi          ALiBi (Press et al. 2022): score (i, j) of head n gets
//                  −m_n·|causal_offset + i − j|, the slopes m_n as in the
//                  paper (attention_formulas::alibi_slope). Causal, that is
//                  −m_n·(i − j) over the keys a query sees; not causal (an
//                  encoder), the symmetric form −m_n·|i − j|.
//   key_padding    (B, S) bool, true where a key is hidden; or undefined.
//   dropout_p      on the weights, when training; the mask is the one
//                  dropout(weights (B, h, T, S), p, training, gen) would draw
//                  (element (b, n, i, j) is number ((b·h + n)·T + i)·S + j of
//                  that tensor's Philox stream) and the generator (the global
//                  one if gen is null) advances by as much, so the fused and
//                  the composed path agree mask for mask. Nothing is drawn
//                  when !training or p == 0.
// A query that sees no key at all gives a row of zeros and zero gradient, as
// ops/softmax.h does for a fully masked row.
//
// Forward keeps a running max and sum per query row (the max starts at -inf)
// over key tiles and saves q, k, v, out and the row log-sum-exp lse (B, h, T)
// (-inf for a fully masked row). Backward recomputes the probabilities tile by
// tile: D_i = rowsum(dO∘O); P = exp(s − lse); with dropout W = P·mask/(1−p);
// dV = Wᵀ dO; dP = mask/(1−p) ∘ (dO Vᵀ); dS = P∘(dP − D); dQ = dS K·scale;
// dK = dSᵀ Q·scale. Under create_graph the backward instead differentiates the
// op's composition in ops (ops/attention_in_ops.h), which forms the (T, S)
// weights: higher-order gradients at O(T·S) memory.
// Not here: the projections and head splitting (nn/attention/), returning the
// weights (the module composes them, with matmul_kv_heads and alibi_bias of
// ops/attention_in_ops.h). Kernels: ops/cpu/ and ops/cuda/attention.*.
#pragma once

#include <cstdint>

#include "core/dispatch.h"
#include "core/random.h"
#include "core/tensor.h"

namespace ks {

struct SdpaOptions {
  double scale = 0;  // <= 0: 1/√p
  bool causal = false;
  int64_t causal_offset = 0;  // query i sees key j iff j <= causal_offset + i
  int64_t window = 0;         // > 0 (causal only): and iff j > causal_offset + i − window
  bool alibi = false;         // linear position biases, −m_head·|causal_offset + i − j|
  Tensor key_padding{};       // (B, S) bool, true = hidden; or undefined
  double dropout_p = 0;       // in [0, 1]
  bool training = false;
  Generator* gen = nullptr;  // null: the global generator
};

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, const SdpaOptions& opt = {});

// --- kernels ---
// What the kernels need of the options, resolved by the op.
struct SdpaParams {
  double scale = 1;
  bool causal = false;
  int64_t causal_offset = 0;
  int64_t window = 0;     // > 0: the sliding window (softmax attention only; causal)
  bool alibi = false;     // −m_head·|causal_offset + i − j| on every score (softmax attention only)
  bool dropout = false;   // draw a mask (training and p > 0)
  double keep = 1;        // 1 − p: element kept iff its uniform draw < keep
  double drop_scale = 1;  // 1 / (1 − p), 0 for p = 1
  uint64_t seed = 0;
  uint64_t first_block = 0;  // Philox block of element 0; element n uses first_block + n / 4
};

// Throws "<op>: ..." unless operand `what` is defined, of q's dtype and on q's device.
void check_attention_operand(const char* op, const char* what, const Tensor& t, const Tensor& q);

// The checks and resolution every fused attention op shares (this one and
// ops/mixture_attention.h): key_padding must be bool (B, S) on q's device,
// dropout_p in [0, 1], scale finite (<= 0: 1/√p); when training with
// dropout, the generator's blocks for dropout()'s mask of the (B, h, T, S)
// weights are reserved. Errors name `op`.
SdpaParams resolve_attention_params(const char* op, const Tensor& q, int64_t S, const Tensor& key_padding, double scale,
                                    bool causal, int64_t causal_offset, double dropout_p, bool training,
                                    Generator* gen);

// out (B, h, T, e) and lse (B, h, T): contiguous, of q's dtype (lse float32
// for a 16-bit q: the row statistics stay wide). q (B, h, T, p),
// k (B, g, S, p), v (B, g, S, e) with g dividing h, any strides; key_padding
// (B, S) bool any strides, or undefined. Shapes checked.
using SdpaForwardKernel = void(const Tensor& out, const Tensor& lse, const Tensor& q, const Tensor& k, const Tensor& v,
                               const Tensor& key_padding, const SdpaParams& prm);
extern KernelTable<SdpaForwardKernel> sdpa_forward_kernel;
// dq, dk, dv contiguous, shaped like q, k, v (every one defined; dk, dv summed
// over each key/value head's group); g (B, h, T, e) any strides; out and lse
// as the forward wrote them.
using SdpaBackwardKernel = void(const Tensor& dq, const Tensor& dk, const Tensor& dv, const Tensor& g, const Tensor& q,
                                const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse,
                                const Tensor& key_padding, const SdpaParams& prm);
extern KernelTable<SdpaBackwardKernel> sdpa_backward_kernel;

}  // namespace ks
