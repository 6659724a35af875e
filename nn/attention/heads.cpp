// nn/attention/heads.cpp — shared attention plumbing.
#include "nn/attention/heads.h"

#include <algorithm>
#include <tuple>

#include "autograd/grad_mode.h"
#include "autograd/node.h"
#include "core/copy.h"
#include "core/factory.h"
#include "ops/compare.h"
#include "ops/elementwise.h"
#include "ops/shape.h"
#include "ops/view.h"

namespace ks::nn {

Tensor split_heads(const Tensor& x, int64_t heads, int64_t head_dim) {
  return transpose(view(x, {x.size(0), x.size(1), heads, head_dim}), 1, 2);
}

Tensor merge_heads(const Tensor& x) {
  return reshape(transpose(x, 1, 2), {x.size(0), x.size(2), x.size(1) * x.size(3)});
}

Tensor gate_and_merge_heads(Attention& attn, const Tensor& heads) {
  Tensor gated = heads;
  if (attn.head_gate.defined()) {
    const Tensor& g = attn.head_gate;
    const int64_t h = heads.size(1);
    KS_CHECK(g.dim() == 1 && g.size(0) == h, attn.type_name(), ": head_gate must be (", h,
             ",), one gate per head, got ", describe(g));
    KS_CHECK(g.dtype() == heads.dtype() && g.device() == heads.device(), attn.type_name(), ": head_gate is ",
             describe(g), " but the heads are ", describe(heads));
    gated = mul(heads, view(g, {1, h, 1, 1}));
  }
  if (attn.return_weights) attn.record().heads = detach(gated);
  return merge_heads(gated);
}

Tensor attention_mask(const AttentionMask& mask, int64_t batch, int64_t t, int64_t s, int64_t offset, Device device,
                      int64_t window) {
  Tensor out;
  if (mask.causal) {
    Tensor c = Tensor::empty({1, 1, t, s}, kBool, Device::cpu());
    bool* p = c.data<bool>();
    for (int64_t i = 0; i < t; ++i)
      for (int64_t j = 0; j < s; ++j) p[i * s + j] = j > offset + i || (window > 0 && j <= offset + i - window);
    out = device.is_cpu() ? c : to(c, device);
  }
  if (mask.key_padding.defined()) {
    Tensor pad = view(mask.key_padding, {batch, 1, 1, s});
    out = out.defined() ? logical_or(out, pad) : pad;
  }
  return out;
}

Tensor append_to_cache(const Tensor& stored, const Tensor& fresh, int64_t dim) {
  return stored.defined() ? cat({stored, fresh}, dim) : fresh;
}

namespace {

// True where `stored` is the start of `room` and nobody else holds `room`.
bool room_is_ours(const Tensor& room, const Tensor& stored, int64_t dim) {
  if (!room.defined() || !stored.defined() || room.impl_ptr().use_count() != 1) return false;
  if (stored.impl()->storage != room.impl()->storage || stored.storage_offset() != room.storage_offset() ||
      stored.strides() != room.strides() || stored.dtype() != room.dtype())
    return false;
  for (int64_t d = 0; d < room.dim(); ++d)
    if (d != dim && stored.size(d) != room.size(d)) return false;
  return true;
}

}  // namespace

Tensor append_to_room(Tensor& room, const Tensor& stored, const Tensor& fresh, int64_t dim) {
  const bool recorded =
      GradMode::is_enabled() && (fresh.requires_grad() || (stored.defined() && stored.requires_grad()));
  if (recorded) {
    room = Tensor();
    return append_to_cache(stored, fresh, dim);
  }
  const int64_t held = stored.defined() ? stored.size(dim) : 0, needed = held + fresh.size(dim);
  const bool in_place = room_is_ours(room, stored, dim) && fresh.dtype() == room.dtype() &&
                        fresh.device() == room.device() && room.size(dim) >= needed;
  if (!in_place) {
    Shape sizes = fresh.sizes();
    sizes[size_t(dim)] = std::max<int64_t>(2 * needed, 16);
    Tensor grown = Tensor::empty(sizes, fresh.dtype(), fresh.device());
    if (held > 0) copy_(narrow(grown, dim, 0, held), stored);
    room = grown;
  }
  copy_(narrow(room, dim, held, fresh.size(dim)), fresh);
  return narrow(room, dim, 0, needed);  // no history: nothing here requires grad
}

CachedKeys keys_through_cache(AttentionCache* cache, const ProjectKeys& project, const Tensor& key_padding,
                              int64_t batch, int64_t k_dim, Device device) {
  CachedKeys out;
  out.key_padding = key_padding;
  if (cache && cache->is_static && cache->length > 0) {
    out.k = cache->k;
    out.v = cache->v;
    if (!out.key_padding.defined()) out.key_padding = cache->key_padding;
    return out;
  }
  std::tie(out.k, out.v) = project();
  if (!cache) return out;
  if (!cache->is_static) {
    out.offset = cache->length;
    out.k = append_to_room(cache->k_room, cache->k, out.k, k_dim);
    out.v = append_to_room(cache->v_room, cache->v, out.v, 2);
    if (key_padding.defined() || cache->key_padding.defined()) {
      const int64_t fresh_len = out.v.size(2) - cache->length;
      Tensor fresh =
          key_padding.defined() ? key_padding : zeros({batch, fresh_len}, {.dtype = kBool, .device = device});
      Tensor old = cache->key_padding.defined() || cache->length == 0
                       ? cache->key_padding
                       : zeros({batch, cache->length}, {.dtype = kBool, .device = device});
      out.key_padding = append_to_cache(old, fresh, 1);
    }
  }
  cache->k = out.k;
  cache->v = out.v;
  cache->key_padding = out.key_padding;
  cache->length = out.v.size(2);
  return out;
}

void check_attention_inputs(const AttentionConfig& cfg, const Tensor& q, const Tensor& k, const Tensor& v,
                            const AttentionMask& mask, const AttentionCache* cache) {
  const char* who = cfg.type.c_str();
  KS_CHECK(q.dim() == 3 && q.size(2) == cfg.d_model, who, " attention: query must be (B, T, ", cfg.d_model, "), got ",
           describe(q));
  const bool reuse = cache && cache->is_static && cache->length > 0;
  if (!reuse) {
    KS_CHECK(k.dim() == 3 && k.size(2) == cfg.resolved_kv_dim() && k.size(0) == q.size(0), who,
             " attention: key must be (", q.size(0), ", S, ", cfg.resolved_kv_dim(), "), got ", describe(k));
    KS_CHECK(v.sizes() == k.sizes(), who, " attention: value ", describe(v), " must match key ", describe(k));
  }
  if (cache && cache->length > 0) {
    const Tensor& held = cache->k.defined() ? cache->k : cache->state;
    KS_CHECK(!held.defined() || held.size(0) == q.size(0), who, " attention: the cache holds batch size ", held.size(0),
             ", got a query of batch size ", q.size(0));
  }
  if (mask.key_padding.defined()) {
    KS_CHECK(mask.key_padding.dtype() == kBool && mask.key_padding.dim() == 2 && mask.key_padding.size(0) == q.size(0),
             who, " attention: key_padding must be bool (B, S) with B = ", q.size(0), ", got ",
             describe(mask.key_padding));
    const bool growing = cache && !cache->is_static && cache->length > 0;
    const int64_t s = reuse ? cache->length : k.size(1);
    KS_CHECK(mask.key_padding.size(1) == s, who, " attention: key_padding covers ", mask.key_padding.size(1),
             " keys but there are ", s,
             growing ? " new keys (a growing cache takes the padding of the new keys only)" : "");
  }
}

}  // namespace ks::nn
