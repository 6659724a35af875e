// ops/mixture.h — attention weights over a mixture of keys, fused: the
// log-sum-exp over the M keys of each position, the mask and the softmax
// over positions in one pass (the core of MGK attention, Nguyen et al.).
//
//   x_irj  = scale · s_irj + bias_rj                    s: (..., T, M, S), bias: (..., M, S)
//   ℓ_ij   = log Σ_r exp(x_irj)                         hard: max_r x_irj
//   A_ij   = exp(ℓ_ij) / Σ_j' exp(ℓ_ij')                over the j' with mask_ij' false
//   γ_irj  = exp(x_irj − ℓ_ij)                          hard: 1 at the first argmax r, else 0
//
// A (..., T, S) are the attention weights; γ (..., T, M, S) the posterior
// responsibilities of the M keys (Σ_r γ_irj = 1 on visible keys), which the
// soft-E step of MGK averages — computed only when asked for
// (responsibilities = true), since writing them costs as much memory traffic
// as the rest of the op. Hidden positions, and every position of a fully
// masked row, get A = 0 and γ = 0 (never NaN). Written with exponentials
// alone, the kernel needs no logarithm: exp(ℓ_ij − m_i) = exp(max_r x_irj −
// m_i) · Σ_r exp(x_irj − max_r x_irj), m_i the row's largest visible max_r x.
//
// scores: float32 or float64, at least 3-d, any strides. bias: the same
// dtype, broadcastable to (..., M, S) (e.g. (M, S) or (1, h, M, S)). mask:
// bool, broadcastable to (..., T, S) (e.g. a causal (T, S) or a padding
// (B, 1, 1, S)), or undefined for none. Results are contiguous.
// Backward (through A only; γ carries no gradient) saves A, the scores and
// the bias, and recomputes γ row by row:
//   dℓ_ij = A_ij (g_ij − Σ_j' g_ij' A_ij'),   ds_irj = scale · γ_irj · dℓ_ij,
//   dbias_rj = Σ_i γ_irj · dℓ_ij   (then summed to bias's shape);
// under create_graph it differentiates the composition in ops instead
// (ops/attention_in_ops.h), for higher-order gradients.
// Not here: the projections, ‖k‖² and log π (the caller builds bias), dropout.
#pragma once

#include "core/dispatch.h"
#include "core/tensor.h"

namespace ks {

struct MixtureOptions {
  bool hard = false;              // max over components instead of log-sum-exp
  bool responsibilities = false;  // also return γ
};
struct MixtureSoftmax {
  Tensor weights;           // A (..., T, S), differentiable
  Tensor responsibilities;  // γ (..., T, M, S), no history; undefined unless asked for
};
MixtureSoftmax mixture_softmax(const Tensor& scores, const Tensor& bias, double scale, const Tensor& mask = Tensor(),
                               MixtureOptions opts = {});

// --- kernels ---
// weights (..., T, S): contiguous output; resp (..., T, M, S): contiguous
// output or undefined (not wanted). scores (..., T, M, S), bias (..., M, S)
// and mask (bool (..., T, S) or undefined): any strides, 0 included
// (broadcast views of those shapes).
using MixtureSoftmaxKernel = void(const Tensor& weights, const Tensor& resp, const Tensor& scores, const Tensor& bias,
                                  const Tensor& mask, double scale, bool hard);
extern KernelTable<MixtureSoftmaxKernel> mixture_softmax_kernel;
// dscores (..., T, M, S) and dbias (..., M, S): contiguous outputs, either
// may be undefined (not wanted); g, scores, bias: any strides; weights: the
// forward's output.
using MixtureSoftmaxBackwardKernel = void(const Tensor& dscores, const Tensor& dbias, const Tensor& g,
                                          const Tensor& weights, const Tensor& scores, const Tensor& bias, double scale,
                                          bool hard);
extern KernelTable<MixtureSoftmaxBackwardKernel> mixture_softmax_backward_kernel;

}  // namespace ks
