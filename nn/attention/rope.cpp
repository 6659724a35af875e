// nn/attention/rope.cpp — apply_rope: the families' one call into ops/rope.h.
#include "nn/attention/rope.h"

#include "ops/rope.h"

namespace ks::nn {

Tensor apply_rope(const AttentionConfig& cfg, const Tensor& x, int64_t offset) {
  if (cfg.rope_theta <= 0) return x;
  return rope(x, {.theta = cfg.rope_theta, .scaling = cfg.rope_scaling, .offset = offset});
}

}  // namespace ks::nn
