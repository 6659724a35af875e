// nn/ff_gated.h — the gated feed-forward blocks of Shazeer's "GLU Variants
// Improve Transformer", in Llama's MLP form:
//
//   y = down(drop(act(gate(x)) · up(x))),  gate, up: Linear(d, h); down: Linear(h, d)
//
// registered as the feed-forward kinds "swiglu" (act = SiLU, Llama's) and
// "geglu" (act = GELU, erf form). Parameters gate/up/down.{weight,bias}
// (no biases with bias = false, as in Llama).
//
// Hidden width h: d_ff when it is set. When the config leaves d_ff 0, h is
// 2/3 of the MLP's 4·d, rounded up to a multiple of 8 (Llama's rule with
// multiple_of = 8): h = 8·⌈⌈8d/3⌉ / 8⌉, e.g. d 256 -> 688, d 512 -> 1368. With
// three matrices of d·h instead of two of d·4d, the block keeps the MLP's
// parameter count and FLOPs to within the rounding.
// Not here: the plain MLP (nn/ff_mlp.h).
#pragma once

#include "nn/feed_forward.h"

namespace ks::nn {

class GatedFeedForward : public FeedForward {
 public:
  enum class Gate { SiLU, GELU };
  GatedFeedForward(int64_t d_model, int64_t hidden, Gate act, double dropout = 0.0, bool bias = true);
  Tensor forward(const Tensor& x) const override;  // (..., d) -> (..., d)
  std::shared_ptr<Linear> gate, up, down;
  std::shared_ptr<Dropout> drop;
  Gate act;
};

// The default hidden width for model width d: 8·⌈⌈8d/3⌉ / 8⌉.
int64_t gated_hidden_width(int64_t d_model);

}  // namespace ks::nn
