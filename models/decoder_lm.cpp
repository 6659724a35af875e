// models/decoder_lm.cpp — the decoder-only LM: forward, loss, cached
// generation (sampling with stop strings, beam search) and its cost report.
#include "models/decoder_lm.h"

#include <cmath>

#include "autograd/anomaly.h"
#include "autograd/grad_mode.h"
#include "core/copy.h"
#include "core/factory.h"
#include "nn/init.h"
#include "ops/compare.h"
#include "ops/elementwise.h"
#include "ops/indexing.h"
#include "ops/linalg.h"
#include "ops/linear_cross_entropy.h"
#include "ops/loss.h"
#include "ops/shape.h"
#include "ops/softmax.h"
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
  if (!cfg.options_as<DecoderLmOptions>().tie_embeddings) {
    head = register_module("head", std::make_shared<nn::Linear>(cfg.d_model, cfg.vocab_size, /*bias=*/false));
  } else {
    // N(0, 1) rows would give normalised states logits of variance d (a first loss of ~20 nats at d = 32);
    // N(0, 1/d) rows give unit-variance logits, and forward scales the lookups back up by √d.
    // (Under nn::Q8WeightScope the table is Q8_0 blocks already, zero until loaded: left as it is.)
    NoGradGuard no_grad;
    if (tok->weight.defined()) {
      nn::init::normal_(tok->weight, 0.0, 1.0 / std::sqrt(double(cfg.d_model)));
      if (cfg.pad_id >= 0) fill_(tok->weight.alias({cfg.d_model}, {1}, cfg.pad_id * cfg.d_model), 0.0);
    }
  }
}

namespace {

// The output layer: h (..., d) -> logits (..., V).
Tensor output_layer(const nn::Linear* head, const nn::Embedding& tok, const Tensor& h) {
  return head ? head->forward(h) : tok.project(h);
}

}  // namespace

Tensor DecoderLM::forward(const Tensor& tokens, std::vector<nn::DecoderLayerCache>* caches, const LeftPadding* left) {
  return output_layer(head.get(), *tok, features(tokens, caches, left));  // (B, T, V)
}

Tensor DecoderLM::forward_last(const Tensor& tokens, std::vector<nn::DecoderLayerCache>* caches,
                               const LeftPadding* left) {
  const Tensor h = features(tokens, caches, left);                     // (B, T, d)
  return output_layer(head.get(), *tok, select(h, 1, h.size(1) - 1));  // (B, V)
}

Tensor DecoderLM::features(const Tensor& tokens, std::vector<nn::DecoderLayerCache>* caches, const LeftPadding* left) {
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
  // A tied table's lookup: features reversed, √d-scaled (ModelConfig::tied_lookup_reversed,
  // DecoderLmOptions::tied_lookup_scaled).
  if (!head && config.tied_lookup_reversed) e = flip(e, {-1});
  if (!head && config.options_as<DecoderLmOptions>().tied_lookup_scaled) e = mul(e, std::sqrt(double(config.d_model)));
  Tensor h, self_padding;
  if (left) {
    KS_CHECK(int64_t(left->pads.size()) == tokens.size(0), "decoder_lm: left padding of ", left->pads.size(),
             " rows for tokens ", describe(tokens));
    std::vector<int64_t> starts;  // row b's slot `offset` is its position offset − pads[b]
    for (int64_t p : left->pads) starts.push_back(offset - p);
    h = pos.add(e, starts);
    self_padding = left->key_padding;
  } else {
    h = pos.add(e, offset);
  }
  for (size_t i = 0; i < layers->size(); ++i) {
    NameScope scope("layers", int64_t(i));  // anomaly mode's "layers.3.ff"
    h = (*layers)[i].forward(h, Tensor(), self_padding, Tensor(), caches ? &(*caches)[i] : nullptr);
  }
  if (ln_f) h = ln_f->forward(h);
  return h;  // (B, T, d)
}

Tensor DecoderLM::scored_targets(const Tensor& targets) const {
  if (config.pad_id < 0) return targets;
  return masked_fill(targets, eq(targets, double(config.pad_id)), double(kNoTarget));
}

Tensor DecoderLM::loss(const Tensor& tokens, const Tensor& targets) {
  KS_CHECK(targets.defined() && targets.dtype() == kInt64 && targets.sizes() == tokens.sizes(),
           "decoder_lm: targets must be int64 of the tokens' shape ", describe(tokens), ", got ",
           targets.defined() ? describe(targets) : std::string("undefined"));
  const CrossEntropyOptions opts{.ignore_index = kNoTarget};
  const Tensor t = scored_targets(targets);
  // The fused loss reads the head's weight alone: a head with a LoRA adapter (nn/lora.h) takes the plain path.
  // So does a Q8_0 output weight (nn::Q8WeightScope), which only linear_q8_0 reads.
  if (config.options_as<DecoderLmOptions>().fused_loss && !(head && head->lora) && output_weight().defined())
    return linear_cross_entropy(features(tokens), output_weight(), Tensor(), t, opts);
  Tensor logits = forward(tokens);  // checks the tokens
  const int64_t n = tokens.numel();
  return cross_entropy(reshape(logits, {n, config.vocab_size}), reshape(t, {n}), opts);
}

Predictions DecoderLM::predict(const Batch& b) {
  Tensor logits = forward(b.tokens);  // (B, T, V)
  return {reshape(logits, {-1, logits.size(2)}), reshape(scored_targets(b.targets), {-1}), kNoTarget};
}

Tensor DecoderLM::loss(const Batch& b) { return loss(b.tokens, b.targets); }

Tensor DecoderLM::generate(const Tensor& prompt, int64_t max_new_tokens, const SamplingOptions& opts,
                           const StopStrings& stop) {
  KS_CHECK(max_new_tokens >= 0, "decoder_lm: generate: max_new_tokens must be >= 0, got ", max_new_tokens);
  check_tokens(prompt, config.vocab_size, config.max_len, 0, "decoder_lm: generate");
  KS_CHECK(prompt.size(1) + max_new_tokens <= config.max_len, "decoder_lm: generate: ", prompt.size(1),
           " prompt tokens + ", max_new_tokens, " new ones exceed max_len ", config.max_len);
  stop.check();
  if (max_new_tokens == 0) return prompt;

  NoGradGuard no_grad;
  nn::EvalModeGuard eval_mode(*this);  // dropout off while generating

  const int64_t B = prompt.size(0);
  const bool penalized = opts.repetition_penalty != 1.0;
  std::vector<Tensor> pieces{prompt};
  std::vector<std::vector<int64_t>> generated(size_t(stop.empty() ? 0 : B));
  std::vector<bool> stopped(generated.size(), false);
  int64_t running = B;
  std::vector<nn::DecoderLayerCache> caches;
  Tensor logits = forward_last(prompt, &caches);  // (B, V): the prompt in one pass
  for (int64_t step = 0; step < max_new_tokens; ++step) {
    const Tensor seen = penalized ? cat(pieces, 1) : Tensor();  // (B, T0 + step)
    Tensor next = sample_next(logits, opts, seen);              // (B)
    pieces.push_back(unsqueeze(next, 1));
    if (!stop.empty()) {
      const std::vector<int64_t> ids = next.to_vector<int64_t>();
      for (int64_t b = 0; b < B; ++b) {
        if (stopped[size_t(b)]) continue;
        generated[size_t(b)].push_back(ids[size_t(b)]);
        if (stop.find(stop.decode(generated[size_t(b)])) != std::string::npos) {
          stopped[size_t(b)] = true;
          --running;
        }
      }
      if (running == 0) break;
    }
    if (step + 1 < max_new_tokens) logits = forward_last(pieces.back(), &caches);  // one new position
  }
  return cat(pieces, 1);
}

std::vector<Hypothesis> DecoderLM::beam_search(const Tensor& prompt, int64_t max_new_tokens, int64_t beam_size,
                                               double length_penalty, int64_t eos_id) {
  KS_CHECK(max_new_tokens >= 1, "decoder_lm: beam_search: max_new_tokens must be >= 1, got ", max_new_tokens);
  KS_CHECK(beam_size >= 1, "decoder_lm: beam_search: beam_size must be >= 1, got ", beam_size);
  check_tokens(prompt, config.vocab_size, config.max_len, 0, "decoder_lm: beam_search");
  KS_CHECK(prompt.size(1) + max_new_tokens <= config.max_len, "decoder_lm: beam_search: ", prompt.size(1),
           " prompt tokens + ", max_new_tokens, " new ones exceed max_len ", config.max_len);
  NoGradGuard no_grad;
  nn::EvalModeGuard eval_mode(*this);
  const int64_t B = prompt.size(0), K = beam_size, N = B * K;
  const Device device = prompt.device();
  auto rows_tensor = [&](const std::vector<int64_t>& rows) {
    Tensor t = from_vector(rows, {int64_t(rows.size())});
    return device.is_cpu() ? t : ks::to(t, device);
  };
  std::vector<nn::DecoderLayerCache> caches;
  BeamStep step = [&](const std::vector<int64_t>& parents, const std::vector<int64_t>& tokens) {
    Tensor logits;  // (N, V)
    if (parents.empty()) {
      // The prompt once per source; row b·K + k takes source b's caches and logits.
      std::vector<int64_t> source_of(static_cast<size_t>(N));
      for (int64_t r = 0; r < N; ++r) source_of[size_t(r)] = r / K;
      const Tensor rows = rows_tensor(source_of);
      const Tensor last = forward_last(prompt, &caches);  // (B, V)
      reorder_caches(caches, rows);
      logits = index_select(last, 0, rows);
    } else {
      reorder_caches(caches, rows_tensor(parents));
      // Dead rows carry eos_id, which may be -1: any id in range serves, their outputs are ignored.
      std::vector<int64_t> fed = tokens;
      for (int64_t& t : fed)
        if (t < 0 || t >= config.vocab_size) t = 0;
      logits = select(forward(reshape(rows_tensor(fed), {N, 1}), &caches), 1, 0);
    }
    return log_softmax(logits, -1);
  };
  return models::beam_search(
      B, step,
      {.beam_size = K, .max_len = max_new_tokens, .length_penalty = length_penalty, .bos_id = 0, .eos_id = eos_id});
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
             (config.options_as<DecoderLmOptions>().tie_embeddings ? 0 : V * d);
  c.flops_per_token = double(config.layers) * (attn.flops_per_token + ff_kind.flops_per_token(ff_cfg)) + 2.0 * d * V;
  c.kv_cache_bytes =
      4.0 * double(config.layers) * (attn.cache_floats_per_position * double(seq_len) + attn.cache_floats_fixed);
  return c;
}

}  // namespace ks::models
