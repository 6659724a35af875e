// models/decoder_lm.cpp — the decoder-only LM: forward, loss, cached
// generation and its cost report.
#include "models/decoder_lm.h"

#include <cmath>

#include "autograd/anomaly.h"
#include "autograd/grad_mode.h"
#include "core/copy.h"
#include "nn/init.h"
#include "ops/elementwise.h"
#include "ops/linalg.h"
#include "ops/loss.h"
#include "ops/shape.h"
#include "ops/view.h"

namespace ks::models {

DecoderLM::DecoderLM(const ModelConfig& cfg)
    : Model(cfg, "DecoderLM"),
      tok(register_module("tok", std::make_shared<nn::Embedding>(cfg.vocab_size, cfg.d_model, cfg.pad_id))),
      pos(*this, cfg) {
  KS_CHECK(cfg.layers > 0, "decoder_lm: layers must be positive, got ", cfg.layers);
  layers = register_module("layers", std::make_shared<nn::ModuleList<nn::DecoderLayer>>());
  for (int64_t i = 0; i < cfg.layers; ++i)
    layers->push_back(std::make_shared<nn::DecoderLayer>(layer_config(cfg), /*cross_attention=*/false));
  if (cfg.pre_norm) ln_f = register_module("ln_f", nn::make_norm(cfg.d_model, cfg.norm_config()));
  if (!cfg.tie_embeddings) {
    head = register_module("head", std::make_shared<nn::Linear>(cfg.d_model, cfg.vocab_size, /*bias=*/false));
  } else {
    // N(0, 1) rows would give normalised states logits of variance d (a first loss of ~20 nats at d = 32);
    // N(0, 1/d) rows give unit-variance logits, and forward scales the lookups back up by √d.
    NoGradGuard no_grad;
    nn::init::normal_(tok->weight, 0.0, 1.0 / std::sqrt(double(cfg.d_model)));
    if (cfg.pad_id >= 0) fill_(tok->weight.alias({cfg.d_model}, {1}, cfg.pad_id * cfg.d_model), 0.0);
  }
}

Tensor DecoderLM::forward(const Tensor& tokens, std::vector<nn::DecoderLayerCache>* caches) {
  if (caches && caches->empty()) caches->resize(size_t(config.layers));
  KS_CHECK(!caches || int64_t(caches->size()) == config.layers, "decoder_lm: expected ", config.layers,
           " layer caches, got ", caches ? caches->size() : 0);
  const int64_t offset = caches ? (*caches)[0].self.length : 0;
  check_tokens(tokens, config.vocab_size, config.max_len, offset, "decoder_lm");
  if (offset > 0) {
    const nn::AttentionCache& c = (*caches)[0].self;
    const Tensor& held = c.k.defined() ? c.k : c.state;
    KS_CHECK(!held.defined() || held.size(0) == tokens.size(0), "decoder_lm: the caches hold a batch of ", held.size(0),
             " but tokens are ", describe(tokens));
  }

  Tensor e = tok->forward(tokens);  // (B, T, d)
  // A tied table's lookup: √d-scaled, features reversed (models/config.h tied_lookup_reversed).
  if (!head) e = mul(config.tied_lookup_reversed ? flip(e, {-1}) : e, std::sqrt(double(config.d_model)));
  Tensor h = pos.add(e, offset);
  for (size_t i = 0; i < layers->size(); ++i) {
    NameScope scope("layers", int64_t(i));  // anomaly mode's "layers.3.ff"
    h = (*layers)[i].forward(h, Tensor(), Tensor(), Tensor(), caches ? &(*caches)[i] : nullptr);
  }
  if (ln_f) h = ln_f->forward(h);
  return head ? head->forward(h) : matmul(h, transpose(tok->weight, 0, 1));  // (B, T, V)
}

Tensor DecoderLM::loss(const Tensor& tokens, const Tensor& targets) {
  Tensor logits = forward(tokens);  // checks the tokens
  KS_CHECK(targets.defined() && targets.dtype() == kInt64 && targets.sizes() == tokens.sizes(),
           "decoder_lm: targets must be int64 of the tokens' shape ", describe(tokens), ", got ",
           targets.defined() ? describe(targets) : std::string("undefined"));
  const int64_t n = tokens.numel();
  return cross_entropy(reshape(logits, {n, config.vocab_size}), reshape(targets, {n}),
                       {.ignore_index = config.pad_id >= 0 ? config.pad_id : -100});
}

Predictions DecoderLM::predict(const Batch& b) {
  Tensor logits = forward(b.tokens);  // (B, T, V)
  return {reshape(logits, {-1, logits.size(2)}), reshape(b.targets, {-1}), config.pad_id >= 0 ? config.pad_id : -100};
}

Tensor DecoderLM::loss(const Batch& b) { return loss(b.tokens, b.targets); }

Tensor DecoderLM::generate(const Tensor& prompt, int64_t max_new_tokens, const SamplingOptions& opts) {
  KS_CHECK(max_new_tokens >= 0, "decoder_lm: generate: max_new_tokens must be >= 0, got ", max_new_tokens);
  check_tokens(prompt, config.vocab_size, config.max_len, 0, "decoder_lm: generate");
  KS_CHECK(prompt.size(1) + max_new_tokens <= config.max_len, "decoder_lm: generate: ", prompt.size(1),
           " prompt tokens + ", max_new_tokens, " new ones exceed max_len ", config.max_len);
  if (max_new_tokens == 0) return prompt;

  NoGradGuard no_grad;
  nn::EvalModeGuard eval_mode(*this);  // dropout off while generating

  std::vector<Tensor> pieces{prompt};
  std::vector<nn::DecoderLayerCache> caches;
  Tensor logits = forward(prompt, &caches);  // (B, T0, V): the prompt in one pass
  for (int64_t step = 0; step < max_new_tokens; ++step) {
    Tensor next = sample_next(select(logits, 1, logits.size(1) - 1), opts);  // (B)
    pieces.push_back(unsqueeze(next, 1));
    if (step + 1 < max_new_tokens) logits = forward(pieces.back(), &caches);  // one new position
  }
  return cat(pieces, 1);
}

ModelCost DecoderLM::cost(int64_t seq_len) const {
  KS_CHECK(seq_len > 0 && seq_len <= config.max_len,
           "decoder_lm: cost: seq_len must be in [1, max_len = ", config.max_len, "], got ", seq_len);
  const int64_t d = config.d_model, ff = config.resolved_d_ff(), V = config.vocab_size;
  const nn::AttentionCost attn = nn::attention_cost(config.attention.at_width(d), seq_len, /*causal=*/true);

  ModelCost c;
  c.embedding_params = V * d + pos.num_parameters();
  const nn::FeedForwardKind& ff_kind = nn::feed_forward_kind(config.ff);
  const nn::FeedForwardConfig ff_cfg{.d_model = d, .d_ff = ff, .bias = config.bias};
  const int64_t norm_params = nn::norm_kind(config.norm).params(d, config.bias);
  const int64_t per_layer = attn.params + ff_kind.params(ff_cfg) + 2 * norm_params;  // ln1, ln3
  c.params = c.embedding_params + config.layers * per_layer + (config.pre_norm ? norm_params : 0) +
             (config.tie_embeddings ? 0 : V * d);
  c.flops_per_token = double(config.layers) * (attn.flops_per_token + ff_kind.flops_per_token(ff_cfg)) + 2.0 * d * V;
  c.kv_cache_bytes =
      4.0 * double(config.layers) * (attn.cache_floats_per_position * double(seq_len) + attn.cache_floats_fixed);
  return c;
}

}  // namespace ks::models
