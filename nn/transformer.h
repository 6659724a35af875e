// nn/transformer.h — Transformer layers built on any attention family.
//
//   EncoderLayer:  self-attention, feed-forward
//   DecoderLayer:  causal self-attention, optional cross-attention to an
//                  encoder's memory, feed-forward
// Each sub-block is wrapped in a residual connection with a norm either
// before it (pre-LN: x + f(LN(x)), stable without warm-up) or after it
// (post-LN: LN(x + f(x)), as in Vaswani et al.). The norm and the
// feed-forward are the configured kinds (nn/norm.h, nn/feed_forward.h).
// Not here: embeddings, heads and decoding loops (models/).
#pragma once

#include <memory>

#include "nn/attention/attention.h"
#include "nn/feed_forward.h"
#include "nn/layers.h"
#include "nn/norm.h"

namespace ks::nn {

struct LayerConfig {
  int64_t d_model = 0;
  int64_t d_ff = 0;
  double dropout = 0.0;            // on each sub-block's output (residual dropout)
  Activation activation = "gelu";  // the "mlp" feed-forward's
  bool pre_norm = true;
  AttentionConfig attention;  // at_width(d_model) gives each layer's
  std::string ff = "mlp";     // the feed-forward kind; d_ff is its resolved hidden width
  bool ff_bias = true;        // biases in the feed-forward's linears
  NormConfig norm{};          // every norm of the layer
};

class EncoderLayer : public Module {
 public:
  explicit EncoderLayer(const LayerConfig& cfg);
  // x (B, T, d); key_padding (B, T) bool or undefined. Checkpointed in
  // training when activation checkpointing is on (Module::set_activation_checkpointing).
  Tensor forward(const Tensor& x, const Tensor& key_padding = Tensor());
  std::shared_ptr<Attention> attn;
  std::shared_ptr<FeedForward> ff;
  std::shared_ptr<Norm> ln1, ln2;
  std::shared_ptr<Dropout> drop;
  bool pre_norm;

 private:
  Tensor run(const Tensor& x, const Tensor& key_padding);
};

// Decoding state of one DecoderLayer.
struct DecoderLayerCache {
  AttentionCache self;
  AttentionCache cross;  // is_static: the memory's keys/values, projected once
};

class DecoderLayer : public Module {
 public:
  DecoderLayer(const LayerConfig& cfg, bool cross_attention);
  // x (B, T, d); memory (B, S, d) for cross-attention (else undefined);
  // self_padding (B, T) and memory_padding (B, S) bool or undefined.
  // Checkpointed like EncoderLayer's when training without a cache.
  Tensor forward(const Tensor& x, const Tensor& memory = Tensor(), const Tensor& self_padding = Tensor(),
                 const Tensor& memory_padding = Tensor(), DecoderLayerCache* cache = nullptr);
  std::shared_ptr<Attention> self_attn, cross_attn;  // cross_attn null without cross-attention
  std::shared_ptr<FeedForward> ff;
  std::shared_ptr<Norm> ln1, ln2, ln3;
  std::shared_ptr<Dropout> drop;
  bool pre_norm;

 private:
  Tensor run(const Tensor& x, const Tensor& memory, const Tensor& self_padding, const Tensor& memory_padding,
             DecoderLayerCache* cache);
};

}  // namespace ks::nn
