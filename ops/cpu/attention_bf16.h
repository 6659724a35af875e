// ops/cpu/attention_bf16.h — the float32 scaled_dot_product_attention CPU
// kernels under MatmulPrecision::BFloat16 on a packed bf16 path (AMX or
// AVX512-BF16): the same tiled FlashAttention-2 loops as ops/cpu/attention.cpp,
// with each (b, h)'s operands rounded and packed once instead of once per
// tile product (ops/cpu/gemm/gemm.h: bf16::pack_a, pack_b, packed_product).
// Not here: float64, float32 under Float32, and bf16 on the float32 path
// (no bf16 kernel: it computes in float32, core/matmul_precision.h): those
// stay in ops/cpu/attention.cpp.
#pragma once

#include "core/tensor.h"
#include "ops/attention.h"

namespace ks::cpu {

// Whether the kernels below are the ones a float32 attention runs now.
bool sdpa_bf16_applies();

// Shapes and meaning as sdpa_forward_kernel / sdpa_backward_kernel (ops/attention.h).
void sdpa_forward_bf16(const Tensor& out, const Tensor& lse, const Tensor& q, const Tensor& k, const Tensor& v,
                       const Tensor& key_padding, const SdpaParams& prm);
void sdpa_backward_bf16(const Tensor& dq, const Tensor& dk, const Tensor& dv, const Tensor& g, const Tensor& q,
                        const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse,
                        const Tensor& key_padding, const SdpaParams& prm);

}  // namespace ks::cpu
