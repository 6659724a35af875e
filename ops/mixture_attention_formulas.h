// ops/mixture_attention_formulas.h — what the CPU and CUDA kernels of
// mixture_attention share (ops/mixture_attention.h for the math), beyond
// ops/attention_formulas.h (which keys a query sees, dropout's numbering): the
// per-key formulas of the forward's online softmax, of the soft-E responsibilities
// and of the backward.
// Not here: the tile loops, the tile products (BLAS on the CPU, dot products
// from shared memory on the GPU) and the reductions across lanes or tiles.
#pragma once

#include <cmath>
#include <cstdint>

#include "core/host_device.h"
#include "core/random_values.h"
#include "ops/attention.h"
#include "ops/attention_formulas.h"
#include "ops/kernel_math.h"

namespace ks::mixture_attention_formulas {

using namespace attention_formulas;  // visibility, dropout numbering

// Component r's logit from its scaled score scale·q·k_r and its bias.
template <class T> KS_HOST_DEVICE inline T logit(T scaled_score, T bias) { return scaled_score + bias; }

// Forward: a key's share of the running sum under the running max m is
// Σ_r exp(x_r − m) (soft, one term per component) or exp(max_r x_r − m)
// (hard, one term); -inf terms give 0.
template <class T> KS_HOST_DEVICE inline T forward_term(T x, T m) { return kmath::exp(x - m); }

// The running sum's rescale when the max moves from m_old to m_new (0 while m_old is -inf).
template <class T> KS_HOST_DEVICE inline T rescale(T m_old, T m_new) { return kmath::exp(m_old - m_new); }

// What a row saves: lse = m + log l, -inf for a row that saw no key (l = 0).
template <class T> KS_HOST_DEVICE inline T row_lse(T m, T l) { return l > T(0) ? m + kmath::log(l) : -T(INFINITY); }

// out = acc · out_norm(l): 1/l, 0 for a row that saw no key.
template <class T> KS_HOST_DEVICE inline T out_norm(T l) { return l > T(0) ? T(1) / l : T(0); }

// Soft-E: γ_r = exp(x_r − mx) · inv_u with mx = max_r x_r and
// inv_u = 1 / Σ_r exp(x_r − mx) (responsibility_norm).
template <class T> KS_HOST_DEVICE inline T responsibility_term(T x, T mx) {
  return mx == -T(INFINITY) ? T(0) : kmath::exp(x - mx);
}
template <class T> KS_HOST_DEVICE inline T responsibility_norm(T u) {
  return u > T(0) ? T(1) / u : T(0);  // u = 0: a key no component reaches has γ = 0
}

// Backward: P_r = γ_r·A = exp(x_r − lse) (hard: the same at the first argmax
// r, 0 elsewhere; there x_r = max_r x). lse is finite here (a row with lse =
// -inf sees nothing and is skipped).
template <class T> KS_HOST_DEVICE inline T component_prob(T x, T lse) { return kmath::exp(x - lse); }

// dx_r = γ_r·dℓ = P_r·(dA − D), with dA = f·(dO·v_j) and D = dO·O.
template <class T> KS_HOST_DEVICE inline T logit_grad(T p_r, T da, T D) { return p_r * (da - D); }

}  // namespace ks::mixture_attention_formulas
