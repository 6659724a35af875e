// nn/attention/heads.h — helpers every attention family shares: splitting
// the projection output into heads and back (through the head gates), growing a decoding cache, and
// turning an AttentionMask into one boolean "masked" tensor.
#pragma once

#include <functional>
#include <utility>

#include "nn/attention/attention.h"

namespace ks::nn {

// (B, T, h*p) -> (B, h, T, p), a view.
Tensor split_heads(const Tensor& x, int64_t heads, int64_t head_dim);
// (B, h, T, p) -> (B, T, h*p).
Tensor merge_heads(const Tensor& x);
// Every family's last step before its output projection: the heads (B, h, T, e)
// times attn.head_gate (when defined; checked to be (h,) on the heads' device
// and dtype), kept in attn.record().heads when attn.return_weights, then merged
// to (B, T, h·e).
Tensor gate_and_merge_heads(Attention& attn, const Tensor& heads);

// Bool (B or 1, 1, T, S), true where query i must not see key j: the causal
// rule (j > offset + i) and/or key padding (B, S). Undefined if nothing is masked.
Tensor attention_mask(const AttentionMask& mask, int64_t batch, int64_t t, int64_t s, int64_t offset, Device device,
                      int64_t window = 0);

// Appends `fresh` (..., S_new, p) to `stored` along `dim` (a new tensor), or returns fresh.
Tensor append_to_cache(const Tensor& stored, const Tensor& fresh, int64_t dim);

// The same append for a growing decoding cache, without a concatenation per
// step: with autograd off, `stored` is a view of the first positions of
// `room`, which has space for more along `dim`; the fresh positions are
// copied into it and the longer view returned. A full room is replaced by
// one twice the length needed, so n appends copy O(n) positions, not the
// O(n²) of a concatenation per step. It writes in place only where this
// cache alone holds `room` and `stored` still lies at its start: a copied
// AttentionCache (a fork) or a reordered `stored` (beam search) gets a new
// room. Where autograd records (the fresh keys or `stored` require grad),
// it concatenates, as append_to_cache, and drops the room.
Tensor append_to_room(Tensor& room, const Tensor& stored, const Tensor& fresh, int64_t dim);

// The projected keys and values one forward attends to, after the cache.
struct CachedKeys {
  Tensor k, v;         // as the family lays them out, with S along k_dim / dim 2
  Tensor key_padding;  // (B, S) bool or undefined
  int64_t offset = 0;  // keys before this call's first query (for the causal rule)
};
// Without a cache: project() and the given padding. A static cache projects
// on its first call and is reused after that (project() is not called). A
// growing cache appends project()'s keys along k_dim and values along dim 2
// (append_to_room), and appends key_padding (which covers the new keys only;
// missing padding counts as "not padded"). The cache is updated in place.
using ProjectKeys = std::function<std::pair<Tensor, Tensor>()>;
CachedKeys keys_through_cache(AttentionCache* cache, const ProjectKeys& project, const Tensor& key_padding,
                              int64_t batch, int64_t k_dim, Device device);

// Checks query/key/value shapes against the config; names the family.
void check_attention_inputs(const AttentionConfig& cfg, const Tensor& q, const Tensor& k, const Tensor& v,
                            const AttentionMask& mask, const AttentionCache* cache);

}  // namespace ks::nn
