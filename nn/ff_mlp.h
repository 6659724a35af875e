// nn/ff_mlp.h — the classic Transformer feed-forward block (Vaswani et al.),
// Linear(d, d_ff) -> GELU or ReLU -> Dropout -> Linear(d_ff, d), registered as
// the feed-forward kind "mlp" (nn/feed_forward.h), every model's default.
// Parameters fc1.{weight,bias}, fc2.{weight,bias} (no biases with bias = false).
// Hidden width: d_ff, 4·d when the config leaves it 0.
// Not here: the gated kinds (nn/ff_gated.h).
#pragma once

#include "nn/feed_forward.h"

namespace ks::nn {

class MLP : public FeedForward {
 public:
  MLP(int64_t d_model, int64_t d_ff, Activation act = "gelu", double dropout = 0.0, bool bias = true);
  Tensor forward(const Tensor& x) const override;  // (..., d) -> (..., d)
  std::shared_ptr<Linear> fc1, fc2;
  std::shared_ptr<Dropout> drop;
  Activation activation;
};

}  // namespace ks::nn
