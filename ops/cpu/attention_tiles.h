// ops/cpu/attention_tiles.h — what the CPU kernels of the fused attention
// ops (cpu/attention.cpp, cpu/mixture_attention.cpp) share beyond
// ops/attention_formulas.h: a row of dropout factors drawn in dropout()'s
// numbering, one Philox block per 4 weights as ops/cpu/dropout.cpp draws them.
// Not here: the tile loops, the operand views (each kernel's own).
#pragma once

#include <cstdint>

#include "core/random_values.h"
#include "ops/attention.h"

namespace ks::cpu {

// f[c] = (kept ? drop_scale : 0) for the n weights from flat index idx0.
template <class T>
void dropout_factors(T* f, int64_t n, uint64_t idx0, const SdpaParams& prm) {
  const T scale = T(prm.drop_scale);
  int64_t c = 0;
  while (c < n) {
    const uint64_t idx = idx0 + uint64_t(c);
    uint32_t w[4];
    philox4x32_10(prm.seed, 0, prm.first_block + idx / 4, w);
    for (int k = int(idx % 4); k < 4 && c < n; ++k, ++c) f[c] = bernoulli_draw(w, k, prm.keep) ? scale : T(0);
  }
}

}  // namespace ks::cpu
