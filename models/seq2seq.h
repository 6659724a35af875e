// models/seq2seq.h — the encoder-decoder Transformer of Vaswani et al.
// ("Attention Is All You Need"), on any attention family, with greedy and
// beam-search decoding through per-layer caches.
//
//   src (B, S) int64 -> embed·√d + positions -> dropout -> encoder layers
//                    -> [final norm, pre-LN only]      = memory (B, S, d)
//   tgt_in (B, T)    -> embed·√d + positions -> dropout -> decoder layers
//                       (causal self-attention, cross-attention to memory)
//                    -> [final norm, pre-LN only] -> output (B, T, V_tgt)
//
// Choices, following Vaswani et al. and fairseq's transformer:
// - post-LN by default (config.pre_norm switches to pre-LN, which adds the two
//   final norms); sinusoidal positions by default, "learned" gives each
//   side its own table, "rope" rotates queries and keys in the encoder's and
//   the decoder's self-attention (never in cross-attention) and has no table.
// - token tables start as N(0, 1/d), so that after the √d scale they are of
//   unit size like the positions; the pad row is zero and gets no gradient.
// - share_embeddings (fairseq's share_all_embeddings): one table for source
//   and target, which is also the output projection (logits = h Eᵀ, no bias),
//   as in section 3.4 of the paper; its lookups enter with their features
//   reversed (ModelConfig::tied_lookup_reversed), so the decoder does not
//   start by predicting its own input token. Without it, source and target have their
//   own tables and the output is a separate Linear(d, V_tgt) with bias.
// - key padding: positions holding pad_id are masked as keys on both sides
//   (the encoder's self-attention, the decoder's self- and cross-attention);
//   loss() ignores pad_id targets.
// - generation (greedy_decode, beam_search) runs without gradients and in
//   eval mode (dropout off), restoring the training mode afterwards. max_len
//   there is the most tokens generated per sequence (eos included), at most
//   config.max_len; sequences come back without bos, up to and excluding eos.
// Not here: the beam bookkeeping (models/beam_search.h), tokenizers, training.
#pragma once

#include <memory>
#include <vector>

#include "models/beam_search.h"
#include "models/model.h"
#include "nn/container.h"
#include "nn/transformer.h"

namespace ks::models {

// seq2seq's own keys (models/kind.h with_model_options), read typed by
// config.options_as<Seq2SeqOptions>(); parsed, documented and checked in
// models/seq2seq_kind.cpp. The shared keys it takes (pad_id, 0 by default
// here, and tied_lookup_reversed) are ModelConfig's.
struct Seq2SeqOptions : ModelOptions {
  int64_t src_vocab_size = 0;  // required (the data fills it in)
  int64_t tgt_vocab_size = 0;  // required (the data fills it in)
  int64_t encoder_layers = 2;
  int64_t decoder_layers = 2;
  bool share_embeddings = false;  // needs src_vocab_size == tgt_vocab_size
  double label_smoothing = 0.0;
  int64_t bos_id = 1, eos_id = 2;

  static Seq2SeqOptions parse(const nlohmann::json& section, const std::string& prefix);
  static std::vector<KeyDoc> option_keys();
  nlohmann::json to_json() const override;
  void validate(const ModelConfig& cfg, const std::string& prefix) const override;
};

// Incremental decoding state: one cache per decoder layer, plus how many
// target positions have been decoded (the next token's position).
struct DecodeCache {
  std::vector<nn::DecoderLayerCache> layers;
  int64_t length = 0;
  // Keeps rows `rows` (int64 (N'), each in [0, N)) of every cached tensor, in
  // that order: beams that continue another beam's prefix take its state.
  void reorder(const Tensor& rows);
};

class Seq2Seq : public Model {
 public:
  explicit Seq2Seq(const ModelConfig& cfg);

  struct Encoded {
    Tensor memory;   // (B, S, d)
    Tensor padding;  // (B, S) bool, true at pad_id
  };
  Encoded encode(const Tensor& src);
  // tgt_in (B, T) int64 -> logits (B, T, V_tgt). With a cache, tgt_in holds the
  // positions after cache->length, and the cache grows by T.
  Tensor decode(const Tensor& tgt_in, const Tensor& memory, const Tensor& memory_padding, DecodeCache* cache = nullptr);
  Tensor forward(const Tensor& src, const Tensor& tgt_in);
  // Mean cross-entropy over the targets that are not pad_id, with
  // Seq2SeqOptions::label_smoothing. tgt_out (B, T) int64, the same shape as tgt_in.
  Tensor loss(const Tensor& src, const Tensor& tgt_in, const Tensor& tgt_out);
  // Model's batch methods: forward(tokens, decoder_input) as (B·S, V_tgt)
  // against targets (B·S), pad_id ignored; loss(tokens, decoder_input, targets),
  // with label smoothing.
  Predictions predict(const Batch& batch) override;
  Tensor loss(const Batch& batch) override;

  // Argmax at every step, stopping at eos.
  std::vector<std::vector<int64_t>> greedy_decode(const Tensor& src, int64_t max_len);
  // The best hypothesis per source under the GNMT length penalty α; beam_size 1 is greedy.
  std::vector<Hypothesis> beam_search(const Tensor& src, int64_t beam_size, int64_t max_len, double alpha = 0.0);

  // Per target token at source and target length seq_len: the encoder's
  // FLOPs per source token plus the decoder's and the output layer's per
  // target token. embedding_params: the token tables and learned positions
  // (an untied output layer is not counted there).
  ModelCost cost(int64_t seq_len) const override;

  std::shared_ptr<nn::Embedding> src_embed, tgt_embed;  // the same module when shared
  std::shared_ptr<nn::Module> src_pos, tgt_pos;         // the positions kind's tables; null for rope
  std::shared_ptr<const nn::Positions> position_kind;   // config.positions (nn/positions/)
  const Seq2SeqOptions& options;                        // config's, typed
  std::shared_ptr<nn::ModuleList<nn::EncoderLayer>> encoder;
  std::shared_ptr<nn::ModuleList<nn::DecoderLayer>> decoder;
  std::shared_ptr<nn::Norm> encoder_norm, decoder_norm;  // pre-LN only
  std::shared_ptr<nn::Linear> out;                       // null when tied to the shared table
  std::shared_ptr<nn::Dropout> drop;

 private:
  Tensor embed(const nn::Embedding& table, const nn::Module* positions, const Tensor& tokens, int64_t offset);
};

}  // namespace ks::models
