// models/encoder_classifier.cpp — encoding, pooling, the single and dual
// heads, and the cost report.
#include "models/encoder_classifier.h"

#include "autograd/anomaly.h"
#include "core/copy.h"
#include "core/factory.h"
#include "nn/init.h"
#include "ops/compare.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"
#include "ops/shape.h"
#include "ops/unary.h"
#include "ops/view.h"

namespace ks::models {

EncoderClassifier::EncoderClassifier(const ModelConfig& cfg)
    : Model(cfg, "EncoderClassifier"),
      tok(register_module("tok", std::make_shared<nn::Embedding>(cfg.vocab_size, cfg.d_model, cfg.pad_id))),
      pos(*this, cfg) {
  KS_CHECK(cfg.layers > 0, "encoder_classifier: layers must be positive, got ", cfg.layers);
  const EncoderClassifierOptions& o = cfg.options_as<EncoderClassifierOptions>();
  KS_CHECK(o.num_classes >= 2, "encoder_classifier: num_classes must be at least 2, got ", o.num_classes);
  KS_CHECK(o.pooling == "mean" || o.pooling == "cls", "encoder_classifier: pooling must be mean or cls, got '",
           o.pooling, "'");
  KS_CHECK(o.head == "linear" || o.head == "mlp", "encoder_classifier: head must be linear or mlp, got '", o.head, "'");
  KS_CHECK(!(o.dual && o.head == "mlp"),
           "encoder_classifier: a dual model has its own two-layer head; "
           "head mlp is for a single document");
  // The tables' std: the layers' N(0, 1) by default, or the LRA code's small
  // init (0.02), under which the positions start as small as the tokens.
  const double table_std = o.embedding_std > 0 ? o.embedding_std : 1.0;
  if (o.embedding_std > 0) {
    if (tok->weight.defined()) {  // (not Q8_0 blocks, nn::Q8WeightScope: values to be loaded)
      nn::init::normal_(tok->weight, 0.0, table_std);
      if (cfg.pad_id >= 0) fill_(tok->weight.alias({cfg.d_model}, {1}, cfg.pad_id * cfg.d_model), 0.0);
    }
    pos.init_normal(table_std);
  }
  if (o.pooling == "cls") {
    cls = register_parameter("cls", empty({cfg.d_model}));
    nn::init::normal_(cls, 0.0, table_std);  // like a token embedding row
  }
  layers = register_module("layers", std::make_shared<nn::ModuleList<nn::EncoderLayer>>());
  for (int64_t i = 0; i < cfg.layers; ++i) layers->push_back(std::make_shared<nn::EncoderLayer>(layer_config(cfg)));
  if (cfg.pre_norm) ln_f = register_module("ln_f", nn::make_norm(cfg.d_model, cfg.norm_config()));
  const int64_t d = cfg.d_model;
  const int64_t ff = cfg.resolved_d_ff();
  if (o.dual) hidden = register_module("hidden", std::make_shared<nn::Linear>(4 * d, 2 * d, cfg.bias));
  if (o.head == "mlp") hidden = register_module("hidden", std::make_shared<nn::Linear>(d, ff, cfg.bias));
  head = register_module("head", std::make_shared<nn::Linear>(o.dual   ? 2 * d
                                                              : hidden ? ff
                                                                       : d,
                                                              o.num_classes, cfg.bias));
}

Tensor EncoderClassifier::encode(const Tensor& tokens) {
  const bool use_cls = cls.defined();
  check_tokens(tokens, config.vocab_size, config.max_len, use_cls ? 1 : 0, "encoder_classifier");
  const int64_t B = tokens.size(0), d = config.d_model;
  Tensor h = tok->forward(tokens);                                                     // (B, T, d)
  Tensor padding = config.pad_id >= 0 ? eq(tokens, double(config.pad_id)) : Tensor();  // (B, T) bool
  if (use_cls) {
    h = cat({expand(view(cls, {1, 1, d}), {B, 1, d}), h}, 1);  // (B, 1 + T, d)
    if (padding.defined()) padding = cat({zeros({B, 1}, {.dtype = kBool, .device = tokens.device()}), padding}, 1);
  }
  h = pos.add(h);
  for (size_t i = 0; i < layers->size(); ++i) {
    NameScope scope("layers", int64_t(i));  // anomaly mode's "layers.3.ff"
    h = (*layers)[i].forward(h, padding);
  }
  if (ln_f) h = ln_f->forward(h);

  if (use_cls) return select(h, 1, 0);  // (B, d)
  if (!padding.defined()) return mean(h, {1});
  // Mean over the real tokens; an all-padding row pools to zeros rather than 0/0.
  Tensor keep = unsqueeze(ks::to(logical_not(padding), h.dtype()), 2);  // (B, T, 1)
  return div(sum(mul(h, keep), {1}), clamp(sum(keep, {1}), 1.0, std::nullopt));
}

Tensor EncoderClassifier::forward(const Tensor& tokens) {
  KS_CHECK(!config.options_as<EncoderClassifierOptions>().dual,
           "encoder_classifier: this model is dual (config.dual); call forward(a, b)");
  Tensor z = encode(tokens);                 // (B, d)
  if (hidden) z = relu(hidden->forward(z));  // head "mlp": (B, d_ff)
  return head->forward(z);                   // (B, C)
}

Tensor EncoderClassifier::forward(const Tensor& a, const Tensor& b) {
  KS_CHECK(config.options_as<EncoderClassifierOptions>().dual,
           "encoder_classifier: forward(a, b) needs a dual model (config.dual)");
  KS_CHECK(a.defined() && b.defined() && a.dim() == 2 && b.dim() == 2 && a.size(0) == b.size(0),
           "encoder_classifier: the two documents must be batches (B, T) of one size B, got ",
           a.defined() ? describe(a) : "undefined", " and ", b.defined() ? describe(b) : "undefined");
  Tensor u = encode(a), v = encode(b);                          // (B, d) each, one shared encoder
  Tensor features = cat({u, v, abs(sub(u, v)), mul(u, v)}, 1);  // (B, 4d)
  Tensor z = hidden->forward(features);
  z = nn::activate(config.activation, z);
  return head->forward(z);
}

Predictions EncoderClassifier::predict(const Batch& b) { return {forward(b.tokens), b.labels, -100}; }

ModelCost EncoderClassifier::cost(int64_t seq_len) const {
  const int64_t positions = seq_len + (cls.defined() ? 1 : 0);
  KS_CHECK(seq_len > 0 && positions <= config.max_len, "encoder_classifier: cost: seq_len ", seq_len, " needs ",
           positions, " positions; max_len is ", config.max_len);
  const EncoderClassifierOptions& o = config.options_as<EncoderClassifierOptions>();
  const int64_t d = config.d_model, ff = config.resolved_d_ff(), V = config.vocab_size, C = o.num_classes;
  const nn::AttentionCost attn = nn::attention_cost(config.attention.at_width(d), positions, /*causal=*/false);

  ModelCost c;
  c.embedding_params = V * d + pos.num_parameters() + (cls.defined() ? d : 0);
  const nn::FeedForwardKind& ff_kind = nn::feed_forward_kind(config.ff);
  const nn::FeedForwardConfig ff_cfg{.d_model = d, .d_ff = ff, .bias = config.bias};
  const int64_t norm_params = nn::norm_kind(config.norm).params(d, config.bias);
  const int64_t per_layer = attn.params + ff_kind.params(ff_cfg) + 2 * norm_params;  // ln1, ln2
  const bool mlp = o.head == "mlp";
  const int64_t b = config.bias ? 1 : 0;  // a bias per output of each head linear
  const int64_t head_params = o.dual ? (4 * d * 2 * d + b * 2 * d) + (2 * d * C + b * C)
                              : mlp  ? (d * ff + b * ff) + (ff * C + b * C)
                                     : d * C + b * C;
  c.params = c.embedding_params + config.layers * per_layer + (config.pre_norm ? norm_params : 0) + head_params;

  const double per_sequence =
      double(positions) * double(config.layers) * (attn.flops_per_token + ff_kind.flops_per_token(ff_cfg));
  if (o.dual)
    c.flops_per_token = (2 * per_sequence + 2.0 * (4 * d * 2 * d + 2 * d * C)) / double(2 * seq_len);
  else
    c.flops_per_token = (per_sequence + (mlp ? 2.0 * (d * ff + ff * C) : 2.0 * d * C)) / double(seq_len);
  return c;
}

}  // namespace ks::models
