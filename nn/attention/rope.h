// nn/attention/rope.h — where the attention families apply rotary position
// embeddings (AttentionConfig::rope_theta > 0; the op is ops/rope.h).
//
// Positions are absolute slot indices: query or key t of a call is at
// offset + t, offset being the keys a growing cache already holds (0 without
// a cache; a static, cross-attention cache takes no rope). Key padding does
// not shift them: with right padding the real tokens sit at 0 .. n − 1 as
// they would alone; with left padding they start at the number of pads, and
// since a rotated score depends only on the distance between query and key,
// the real tokens' outputs equal those of the unpadded sequence (to
// round-off) as long as the pads are masked. Keys are rotated before the
// cache keeps them, so cached decoding equals full recomputation.
// Not here: the op, the positions kinds (nn/positions/).
#pragma once

#include "nn/attention/attention.h"

namespace ks::nn {

// The position of this call's first query and first new key.
inline int64_t rope_offset(const AttentionCache* cache) { return cache && !cache->is_static ? cache->length : 0; }

// x (..., T, p) turned by positions offset .. offset + T − 1 when
// cfg.rope_theta > 0; else x itself.
Tensor apply_rope(const AttentionConfig& cfg, const Tensor& x, int64_t offset);

}  // namespace ks::nn
