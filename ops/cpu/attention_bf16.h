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

// Whether the kernels below run an attention of q (B, h, T, p) over k
// (B, g, S, p) now: under bf16 products on a CPU with a bf16 kernel, and
// with at least kPackedMinQueryRows query rows per key/value head (T · h/g).
// They round each head's K and V into panels once and reuse them for every
// query row of its group; below that many rows (a decoding step has T = 1)
// the rounding costs as much as the products it serves, and it is paid
// again at every step for the whole cache (bf16 decoding of a 16-layer
// model ran at half its float32 speed). There the float32 kernel runs, its
// tile products still bf16 GEMMs (the few-row kernel, which reads K and V in
// place: ops/cpu/gemm/gemm.cpp's rule for the same reason).
constexpr int64_t kPackedMinQueryRows = 8;
bool sdpa_bf16_applies(const Tensor& q, const Tensor& k);

// Shapes and meaning as sdpa_forward_kernel / sdpa_backward_kernel (ops/attention.h).
void sdpa_forward_bf16(const Tensor& out, const Tensor& lse, const Tensor& q, const Tensor& k, const Tensor& v,
                       const Tensor& key_padding, const SdpaParams& prm);
void sdpa_backward_bf16(const Tensor& dq, const Tensor& dk, const Tensor& dv, const Tensor& g, const Tensor& q,
                        const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse,
                        const Tensor& key_padding, const SdpaParams& prm);

}  // namespace ks::cpu
