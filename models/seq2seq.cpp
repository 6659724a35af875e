// models/seq2seq.cpp — the encoder-decoder Transformer, its decoding loops and cost.
#include "models/seq2seq.h"

#include "models/shared.h"

#include <cmath>

#include "autograd/anomaly.h"
#include "autograd/grad_mode.h"
#include "core/factory.h"
#include "models/shared.h"
#include "nn/init.h"
#include "ops/compare.h"
#include "ops/elementwise.h"
#include "ops/indexing.h"
#include "ops/linalg.h"
#include "ops/loss.h"
#include "ops/reduce.h"
#include "ops/shape.h"
#include "ops/softmax.h"
#include "ops/view.h"

namespace ks::models {
namespace {

std::shared_ptr<nn::Embedding> token_table(int64_t vocab, int64_t d, int64_t pad_id) {
  auto e = std::make_shared<nn::Embedding>(vocab, d, pad_id);
  if (!e->weight.defined()) return e;  // Q8_0 blocks (nn::Q8WeightScope), values to be loaded
  nn::init::normal_(e->weight, 0.0, 1.0 / std::sqrt(double(d)));
  NoGradGuard no_grad;
  fill_(e->weight.alias({d}, {1}, pad_id * d), 0.0);
  return e;
}

// tokens (B, T) int64, every id in [0, vocab), T >= 1 and cached + T <= max_len.
void check_tokens(const Tensor& tokens, const char* what, int64_t vocab, int64_t max_len, int64_t cached = 0) {
  KS_CHECK(tokens.defined() && tokens.dtype() == kInt64 && tokens.dim() == 2, "seq2seq: ", what,
           " must be int64 token ids (B, T), got ",
           tokens.defined() ? describe(tokens) : std::string("an undefined tensor"));
  KS_CHECK(tokens.size(0) >= 1 && tokens.size(1) >= 1, "seq2seq: ", what, " is empty ", describe(tokens));
  KS_CHECK(cached + tokens.size(1) <= max_len, "seq2seq: ", what, " length ", cached + tokens.size(1),
           cached > 0 ? str(" (", cached, " cached + ", tokens.size(1), ")") : std::string(), " exceeds max_len ",
           max_len);
  const int64_t lo = ks::min(tokens).item<int64_t>(), hi = ks::max(tokens).item<int64_t>();
  KS_CHECK(lo >= 0 && hi < vocab, "seq2seq: ", what, " holds token id ", lo < 0 ? lo : hi,
           ", outside the vocabulary [0, ", vocab, ")");
}

Tensor int64_tensor(const std::vector<int64_t>& values, Shape shape, Device device) {
  Tensor t = from_vector(values, std::move(shape));
  return device.is_cpu() ? t : to(t, device);
}

}  // namespace

void DecodeCache::reorder(const Tensor& rows) { reorder_caches(layers, rows); }

Seq2Seq::Seq2Seq(const ModelConfig& cfg)
    : Model(cfg, "Seq2Seq"), position_kind(cfg.position_kind()), options(config.options_as<Seq2SeqOptions>()) {
  KS_CHECK(options.src_vocab_size > 0 && options.tgt_vocab_size > 0,
           "seq2seq: src_vocab_size and tgt_vocab_size must be "
           "positive, got ",
           options.src_vocab_size, " and ", options.tgt_vocab_size);
  KS_CHECK(!options.share_embeddings || options.src_vocab_size == options.tgt_vocab_size,
           "seq2seq: share_embeddings needs src_vocab_size == tgt_vocab_size (", options.src_vocab_size, " vs ",
           options.tgt_vocab_size, ")");
  KS_CHECK(cfg.pad_id >= 0 && cfg.pad_id < std::min(options.src_vocab_size, options.tgt_vocab_size), "seq2seq: pad_id ",
           cfg.pad_id, " is outside a vocabulary (", options.src_vocab_size, ", ", options.tgt_vocab_size, ")");
  for (int64_t id : {options.bos_id, options.eos_id})
    KS_CHECK(id >= 0 && id < options.tgt_vocab_size, "seq2seq: bos/eos id ", id,
             " is outside the target vocabulary [0, ", options.tgt_vocab_size, ")");
  const int64_t d = cfg.d_model;
  if (options.share_embeddings) {
    src_embed = tgt_embed = register_module("embed", token_table(options.tgt_vocab_size, d, cfg.pad_id));
  } else {
    src_embed = register_module("src_embed", token_table(options.src_vocab_size, d, cfg.pad_id));
    tgt_embed = register_module("tgt_embed", token_table(options.tgt_vocab_size, d, cfg.pad_id));
  }
  // A kind with a table gives each side its own; rope gives none (its rotations are in the self-attentions).
  if (auto table = position_kind->make_table(cfg.max_len, d)) src_pos = register_module("src_pos", table);
  if (auto table = position_kind->make_table(cfg.max_len, d)) tgt_pos = register_module("tgt_pos", table);
  drop = register_module("drop", std::make_shared<nn::Dropout>(cfg.dropout));
  encoder = register_module("encoder", std::make_shared<nn::ModuleList<nn::EncoderLayer>>());
  for (int64_t i = 0; i < options.encoder_layers; ++i)
    encoder->push_back(std::make_shared<nn::EncoderLayer>(layer_config(cfg)));
  decoder = register_module("decoder", std::make_shared<nn::ModuleList<nn::DecoderLayer>>());
  for (int64_t i = 0; i < options.decoder_layers; ++i)
    decoder->push_back(std::make_shared<nn::DecoderLayer>(layer_config(cfg), /*cross_attention=*/true));
  if (cfg.pre_norm) {
    encoder_norm = register_module("encoder_norm", nn::make_norm(d, cfg.norm_config()));
    decoder_norm = register_module("decoder_norm", nn::make_norm(d, cfg.norm_config()));
  }
  if (!options.share_embeddings)
    out = register_module("out", std::make_shared<nn::Linear>(d, options.tgt_vocab_size, cfg.bias));
}

Tensor Seq2Seq::embed(const nn::Embedding& table, const nn::Module* positions, const Tensor& tokens, int64_t offset) {
  Tensor x = table.forward(tokens);  // (B, T, d)
  // A shared table is also the output layer: its lookups enter reversed (ModelConfig::tied_lookup_reversed).
  if (options.share_embeddings && config.tied_lookup_reversed) x = flip(x, {-1});
  x = mul(x, std::sqrt(double(config.d_model)));
  if (positions) x = position_kind->add_table(*positions, x, offset);
  return drop->forward(x);
}

Seq2Seq::Encoded Seq2Seq::encode(const Tensor& src) {
  check_tokens(src, "src", options.src_vocab_size, config.max_len);
  Tensor padding = eq(src, double(config.pad_id));  // (B, S)
  Tensor h = embed(*src_embed, src_pos.get(), src, 0);
  for (size_t i = 0; i < encoder->size(); ++i) {
    NameScope scope("encoder", int64_t(i));  // anomaly mode's "encoder.3.ff"
    h = (*encoder)[i].forward(h, padding);
  }
  if (encoder_norm) h = encoder_norm->forward(h);
  return {h, padding};
}

Tensor Seq2Seq::decode(const Tensor& tgt_in, const Tensor& memory, const Tensor& memory_padding, DecodeCache* cache) {
  const int64_t offset = cache ? cache->length : 0;
  check_tokens(tgt_in, "tgt_in", options.tgt_vocab_size, config.max_len, offset);
  const int64_t B = tgt_in.size(0);
  KS_CHECK(memory.defined() && memory.dim() == 3 && memory.size(0) == B && memory.size(2) == config.d_model &&
               (memory.dtype() == kFloat32 || memory.dtype() == kFloat64),
           "seq2seq: memory must be floating (", B, ", S, ", config.d_model, "), got ",
           memory.defined() ? describe(memory) : std::string("an undefined tensor"));
  KS_CHECK(!memory_padding.defined() || (memory_padding.dtype() == kBool && memory_padding.dim() == 2 &&
                                         memory_padding.size(0) == B && memory_padding.size(1) == memory.size(1)),
           "seq2seq: memory_padding must be bool (", B, ", ", memory.size(1), "), got ", describe(memory_padding));
  if (cache) {
    if (cache->layers.empty()) cache->layers.resize(decoder->size());
    KS_CHECK(cache->layers.size() == decoder->size(), "seq2seq: the cache has ", cache->layers.size(),
             " layers, the decoder ", decoder->size());
  }
  Tensor padding = eq(tgt_in, double(config.pad_id));  // (B, T)
  Tensor h = embed(*tgt_embed, tgt_pos.get(), tgt_in, offset);
  for (size_t i = 0; i < decoder->size(); ++i) {
    NameScope scope("decoder", int64_t(i));
    h = (*decoder)[i].forward(h, memory, padding, memory_padding, cache ? &cache->layers[i] : nullptr);
  }
  if (decoder_norm) h = decoder_norm->forward(h);
  if (cache) cache->length += tgt_in.size(1);
  return out ? out->forward(h) : tgt_embed->project(h);  // (B, T, V)
}

Tensor Seq2Seq::forward(const Tensor& src, const Tensor& tgt_in) {
  Encoded e = encode(src);
  KS_CHECK(tgt_in.defined() && tgt_in.dim() == 2 && tgt_in.size(0) == src.size(0), "seq2seq: tgt_in must be (",
           src.size(0), ", T) like src's batch, got ",
           tgt_in.defined() ? describe(tgt_in) : std::string("an undefined tensor"));
  return decode(tgt_in, e.memory, e.padding);
}

Predictions Seq2Seq::predict(const Batch& b) {
  Tensor logits = forward(b.tokens, b.decoder_input);  // (B, S, V)
  return {reshape(logits, {-1, logits.size(2)}), reshape(b.targets, {-1}), config.pad_id};
}

Tensor Seq2Seq::loss(const Batch& b) { return loss(b.tokens, b.decoder_input, b.targets); }

Tensor Seq2Seq::loss(const Tensor& src, const Tensor& tgt_in, const Tensor& tgt_out) {
  KS_CHECK(tgt_out.defined() && tgt_out.dtype() == kInt64 && tgt_in.defined() && tgt_out.sizes() == tgt_in.sizes(),
           "seq2seq: tgt_out must be int64 of tgt_in's shape ", tgt_in.defined() ? describe(tgt_in) : "", ", got ",
           tgt_out.defined() ? describe(tgt_out) : std::string("an undefined tensor"));
  check_tokens(tgt_out, "tgt_out", options.tgt_vocab_size, config.max_len);
  Tensor logits = forward(src, tgt_in);  // (B, T, V)
  const int64_t V = options.tgt_vocab_size;
  return cross_entropy(reshape(logits, {-1, V}), reshape(tgt_out, {-1}),
                       {.ignore_index = config.pad_id, .label_smoothing = options.label_smoothing});
}

std::vector<std::vector<int64_t>> Seq2Seq::greedy_decode(const Tensor& src, int64_t max_len) {
  KS_CHECK(max_len >= 1 && max_len <= config.max_len, "seq2seq: greedy_decode: max_len must be in [1, ", config.max_len,
           "], got ", max_len);
  NoGradGuard no_grad;  // generation runs in eval mode without gradients
  nn::EvalModeGuard eval_mode(*this);
  Encoded e = encode(src);
  const int64_t B = src.size(0);
  const Device device = e.memory.device();
  DecodeCache cache;
  std::vector<std::vector<int64_t>> result(B);
  std::vector<bool> finished(B, false);
  std::vector<int64_t> next(B, options.bos_id);
  int64_t running = B;
  for (int64_t t = 0; t < max_len && running > 0; ++t) {
    Tensor logits = decode(int64_tensor(next, {B, 1}, device), e.memory, e.padding, &cache);  // (B, 1, V)
    // The argmax of the log-probabilities, not of the logits, so that beam
    // search (which ranks log-probabilities) breaks the same ties.
    std::vector<int64_t> best = argmax(log_softmax(select(logits, 1, 0), -1), -1).to_vector<int64_t>();
    for (int64_t b = 0; b < B; ++b) {
      next[b] = finished[b] ? config.pad_id : best[b];
      if (finished[b]) continue;
      if (best[b] == options.eos_id) {
        finished[b] = true;
        --running;
      } else {
        result[b].push_back(best[b]);
      }
    }
  }
  return result;
}

std::vector<Hypothesis> Seq2Seq::beam_search(const Tensor& src, int64_t beam_size, int64_t max_len, double alpha) {
  KS_CHECK(max_len >= 1 && max_len <= config.max_len, "seq2seq: beam_search: max_len must be in [1, ", config.max_len,
           "], got ", max_len);
  KS_CHECK(beam_size >= 1, "seq2seq: beam_search: beam_size must be >= 1, got ", beam_size);
  NoGradGuard no_grad;  // generation runs in eval mode without gradients
  nn::EvalModeGuard eval_mode(*this);
  Encoded e = encode(src);
  const int64_t B = src.size(0), K = beam_size;
  const Device device = e.memory.device();
  // Each source's memory repeated for its K beams: row b·K + k reads source b.
  std::vector<int64_t> source_of(B * K);
  for (int64_t r = 0; r < B * K; ++r) source_of[r] = r / K;
  Tensor rows = int64_tensor(source_of, {B * K}, device);
  Tensor memory = index_select(e.memory, 0, rows), memory_padding = index_select(e.padding, 0, rows);
  DecodeCache cache;
  BeamStep step = [&](const std::vector<int64_t>& parents, const std::vector<int64_t>& tokens) {
    if (!parents.empty()) cache.reorder(int64_tensor(parents, {B * K}, device));
    Tensor logits = decode(int64_tensor(tokens, {B * K, 1}, device), memory, memory_padding, &cache);
    return log_softmax(select(logits, 1, 0), -1);  // (B·K, V)
  };
  return models::beam_search(B, step,
                             {.beam_size = K,
                              .max_len = max_len,
                              .length_penalty = alpha,
                              .bos_id = options.bos_id,
                              .eos_id = options.eos_id});
}

ModelCost Seq2Seq::cost(int64_t seq_len) const {
  KS_CHECK(seq_len >= 1, "seq2seq: cost: seq_len must be positive, got ", seq_len);
  const ModelConfig& c = config;
  const int64_t d = c.d_model, d_ff = c.resolved_d_ff(), V = options.tgt_vocab_size;
  const nn::AttentionConfig a = c.attention.at_width(c.d_model);
  const nn::AttentionCost self = nn::attention_cost(a, seq_len, false);
  const nn::AttentionCost causal = nn::attention_cost(a, seq_len, true);  // same parameters as self
  const nn::FeedForwardKind& ff_kind = nn::feed_forward_kind(c.ff);
  const nn::FeedForwardConfig ff_cfg{.d_model = d, .d_ff = d_ff, .bias = c.bias};
  const int64_t ff_params = ff_kind.params(ff_cfg), norm_params = nn::norm_kind(c.norm).params(d, c.bias);
  const double ff_flops = ff_kind.flops_per_token(ff_cfg);

  ModelCost cost;
  cost.embedding_params = (options.share_embeddings ? V : options.src_vocab_size + V) * d;
  if (src_pos) cost.embedding_params += src_pos->num_parameters() + tgt_pos->num_parameters();
  cost.params = cost.embedding_params;
  cost.params += options.encoder_layers * (self.params + ff_params + 2 * norm_params);
  cost.params += options.decoder_layers * (2 * self.params + ff_params + 3 * norm_params);
  if (c.pre_norm) cost.params += 2 * norm_params;
  if (!options.share_embeddings) cost.params += d * V + (c.bias ? V : 0);

  cost.flops_per_token = double(options.encoder_layers) * (self.flops_per_token + ff_flops) +
                         double(options.decoder_layers) * (causal.flops_per_token + self.flops_per_token + ff_flops) +
                         2.0 * d * V;  // the output layer (tied or not)
  // Each decoder layer caches its own keys and the projected encoder memory,
  // both seq_len positions of the same family.
  cost.kv_cache_bytes = 4.0 * double(options.decoder_layers) * 2.0 *
                        (self.cache_floats_per_position * double(seq_len) + self.cache_floats_fixed);
  return cost;
}

}  // namespace ks::models
