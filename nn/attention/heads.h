// nn/attention/heads.h — helpers every attention family shares: splitting
// the projection output into heads and back, growing a decoding cache, and
// turning an AttentionMask into one boolean "masked" tensor.
#pragma once

#include "nn/attention/attention.h"

namespace ks::nn {

// (B, T, h*p) -> (B, h, T, p), a view.
Tensor split_heads(const Tensor& x, int64_t heads, int64_t head_dim);
// (B, h, T, p) -> (B, T, h*p).
Tensor merge_heads(const Tensor& x);

// Bool (B or 1, 1, T, S), true where query i must not see key j: the causal
// rule (j > offset + i) and/or key padding (B, S). Undefined if nothing is masked.
Tensor attention_mask(const AttentionMask& mask, int64_t batch, int64_t t, int64_t s, int64_t offset, Device device);

// Appends `fresh` (..., S_new, p) to `stored` along `dim` (a new tensor), or returns fresh.
Tensor append_to_cache(const Tensor& stored, const Tensor& fresh, int64_t dim);

// Checks query/key/value shapes against the config; names the family.
void check_attention_inputs(const AttentionConfig& cfg, const Tensor& q, const Tensor& k, const Tensor& v,
                            const AttentionMask& mask, const AttentionCache* cache);

}  // namespace ks::nn
