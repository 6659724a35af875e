// ops/linear_attention.h — causal linear attention as one fused op: running
// sums over the sequence instead of a (T, T) score matrix.
//
// Per (batch, head), with feature maps already applied (φ ≥ 0 is the
// caller's business, e.g. elu(x) + 1 in nn/attention/linear_attention.h):
//
//   S_i = S₀ + Σ_{j ≤ i} φk_j v_jᵀ      (p, e)   the running state
//   z_i = z₀ + Σ_{j ≤ i} φk_j           (p)      the running normaliser
//   out_i = S_iᵀ φq_i / (φq_iᵀ z_i + eps)
//
//   phi_q, phi_k (B, h, T, p), v (B, h, T, e)  ->  out (B, h, T, e)
//   state S₀ (B, h, p, e) and norm z₀ (B, h, p): the sums of keys that came
//   before (a decoding cache); both undefined (zeros) or both given.
//
// One dtype and device throughout (the state and norm too); any strides
// (stride-0 expanded inputs included); bfloat16 and float16 compute in
// float32 (widened copies, on either device), each result rounded once. The
// result is contiguous. eps >= 0 keeps a query
// that sees no key at all (every key padded, φk = 0) at exactly 0, not NaN;
// it is added to the denominator, never to the numerator.
//
// Cost O(T·p·e) per (b, h) and O(p·e) memory: no (T, T) and no (T, p, e)
// tensor is formed, in forward or backward. Forward saves only the inputs.
// Backward recomputes the prefix states in a forward scan (for dφq) and runs
// the reverse scan R_j = Σ_{i ≥ j} φq_i (g_i / d_i)ᵀ (for dφk, dv, dS₀, dz₀),
// d_i being the denominator. Sums run in float64 whatever the dtype, so a
// float32 state does not drift over long sequences. Under create_graph the
// backward instead differentiates the (T, T) composition in ops
// (ops/attention_in_ops.h), for higher-order gradients.
// Not here: the feature map, masks (zero a padded key's φk and v first), the
// non-causal form (two matmuls, see the module). The kernels: ops/cpu/ and ops/cuda/.
#pragma once

#include "core/dispatch.h"
#include "core/tensor.h"

namespace ks {

Tensor causal_linear_attention(const Tensor& phi_q, const Tensor& phi_k, const Tensor& v,
                               const Tensor& state = Tensor(), const Tensor& norm = Tensor(), double eps = 1e-6);

// --- kernels ---
// out (B, h, T, e) contiguous; phi_q, phi_k, v, state, norm with any strides;
// state and norm both undefined or both defined. Shapes already checked.
using CausalLinearAttentionKernel = void(const Tensor& out, const Tensor& phi_q, const Tensor& phi_k, const Tensor& v,
                                         const Tensor& state, const Tensor& norm, double eps);
extern KernelTable<CausalLinearAttentionKernel> causal_linear_attention_kernel;
// Writes every defined gradient (contiguous, shaped like its input): dq, dk,
// dv, dstate, dnorm. g (B, h, T, e) any strides; the rest as in forward.
using CausalLinearAttentionBackwardKernel = void(const Tensor& dq, const Tensor& dk, const Tensor& dv,
                                                 const Tensor& dstate, const Tensor& dnorm, const Tensor& g,
                                                 const Tensor& phi_q, const Tensor& phi_k, const Tensor& v,
                                                 const Tensor& state, const Tensor& norm, double eps);
extern KernelTable<CausalLinearAttentionBackwardKernel> causal_linear_attention_backward_kernel;

}  // namespace ks
