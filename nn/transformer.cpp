// nn/transformer.cpp — residual wiring of the encoder and decoder layers.
#include "nn/transformer.h"

#include "autograd/anomaly.h"
#include "autograd/checkpoint.h"
#include "autograd/grad_mode.h"
#include "ops/elementwise.h"

namespace ks::nn {
namespace {

// Pre-LN: x + drop(f(LN(x))).  Post-LN: LN(x + drop(f(x))).
template <class F> Tensor residual(const Tensor& x, const Norm& ln, Dropout& drop, bool pre_norm, F f) {
  if (pre_norm) return add(x, drop.forward(f(ln.forward(x))));
  return ln.forward(add(x, drop.forward(f(x))));
}

std::shared_ptr<FeedForward> feed_forward(const LayerConfig& cfg) {
  return make_feed_forward(cfg.ff, {.d_model = cfg.d_model,
                                    .d_ff = cfg.d_ff,
                                    .activation = cfg.activation,
                                    .dropout = cfg.dropout,
                                    .bias = cfg.ff_bias});
}

}  // namespace

EncoderLayer::EncoderLayer(const LayerConfig& cfg) : Module("EncoderLayer"), pre_norm(cfg.pre_norm) {
  attn = register_module("attn", make_attention(cfg.attention.at_width(cfg.d_model)));
  ff = register_module("ff", feed_forward(cfg));
  ln1 = register_module("ln1", make_norm(cfg.d_model, cfg.norm));
  ln2 = register_module("ln2", make_norm(cfg.d_model, cfg.norm));
  drop = register_module("drop", std::make_shared<Dropout>(cfg.dropout));
}

namespace {
// Whether a layer's forward should keep only its inputs (autograd/checkpoint.h).
bool checkpointed(const Module& layer) {
  return layer.activation_checkpointing() && layer.is_training() && GradMode::is_enabled();
}
}  // namespace

Tensor EncoderLayer::forward(const Tensor& x, const Tensor& key_padding) {
  if (checkpointed(*this))  // by value: the recomputation runs in backward, after this call returned
    return checkpoint(
        [this, key_padding](const std::vector<Tensor>& in) { return std::vector<Tensor>{run(in[0], key_padding)}; },
        {x})[0];
  return run(x, key_padding);
}

Tensor EncoderLayer::run(const Tensor& x, const Tensor& key_padding) {
  AttentionMask mask{false, key_padding};
  Tensor h = residual(x, *ln1, *drop, pre_norm, [&](const Tensor& y) {
    NameScope scope("attn");
    return attn->forward(y, mask);
  });
  return residual(h, *ln2, *drop, pre_norm, [&](const Tensor& y) {
    NameScope scope("ff");
    return ff->forward(y);
  });
}

DecoderLayer::DecoderLayer(const LayerConfig& cfg, bool cross_attention)
    : Module("DecoderLayer"), pre_norm(cfg.pre_norm) {
  self_attn = register_module("self_attn", make_attention(cfg.attention.at_width(cfg.d_model)));
  if (cross_attention)
    cross_attn = register_module("cross_attn", make_attention(cfg.attention.at_width(cfg.d_model).cross()));
  ff = register_module("ff", feed_forward(cfg));
  ln1 = register_module("ln1", make_norm(cfg.d_model, cfg.norm));
  if (cross_attention) ln2 = register_module("ln2", make_norm(cfg.d_model, cfg.norm));
  ln3 = register_module("ln3", make_norm(cfg.d_model, cfg.norm));
  drop = register_module("drop", std::make_shared<Dropout>(cfg.dropout));
}

Tensor DecoderLayer::forward(const Tensor& x, const Tensor& memory, const Tensor& self_padding,
                             const Tensor& memory_padding, DecoderLayerCache* cache) {
  if (!cache && checkpointed(*this))
    return checkpoint(
        [this, self_padding, memory_padding](const std::vector<Tensor>& in) {
          return std::vector<Tensor>{run(in[0], in[1], self_padding, memory_padding, nullptr)};
        },
        {x, memory})[0];
  return run(x, memory, self_padding, memory_padding, cache);
}

Tensor DecoderLayer::run(const Tensor& x, const Tensor& memory, const Tensor& self_padding,
                         const Tensor& memory_padding, DecoderLayerCache* cache) {
  AttentionMask causal{true, self_padding};
  Tensor h = residual(x, *ln1, *drop, pre_norm, [&](const Tensor& y) {
    NameScope scope("self_attn");
    return self_attn->forward(y, y, y, causal, cache ? &cache->self : nullptr);
  });
  if (cross_attn) {
    KS_CHECK(memory.defined() || (cache && cache->cross.length > 0),
             "DecoderLayer: cross-attention needs the encoder memory");
    AttentionMask cross{false, memory_padding};
    AttentionCache* cross_cache = nullptr;
    if (cache) {
      cache->cross.is_static = true;
      cross_cache = &cache->cross;
    }
    h = residual(h, *ln2, *drop, pre_norm, [&](const Tensor& y) {
      NameScope scope("cross_attn");
      return cross_attn->forward(y, memory, memory, cross, cross_cache);
    });
  }
  return residual(h, *ln3, *drop, pre_norm, [&](const Tensor& y) {
    NameScope scope("ff");
    return ff->forward(y);
  });
}

}  // namespace ks::nn
