// models/config.h — the JSON configuration of every model, with its defaults
// documented in one place (here) and strict validation: an unknown key, a key
// that does not apply to the chosen model, or a bad value is rejected with a
// message naming the key (and the known key it is a near miss of).
//
//   {"model": "decoder_lm", "vocab_size": 8192, "d_model": 256, "layers": 4,
//    "attention": {"type": "mgk", "heads": 4, "head_dim": 32, "keys": 2}}
//
// Also here, for every config section (tools/train/json_section.h reads the others
// with them): KeyDoc, a key with its one-line meaning, and nearest_key, the
// "did you mean" of an unknown key.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "nn/attention/attention.h"
#include "nn/feed_forward.h"

namespace ks::models {

// Upper bounds on the sizes that allocate, far above any model trained here,
// so that a mistyped size fails in validation with its key named, not as an
// allocation of terabytes.
inline constexpr int64_t kMaxVocabSize = int64_t(1)
                                         << 24;  // a model's ids (a tokenizer has its own cap, data::kMaxVocabSize)
inline constexpr int64_t kMaxLength = int64_t(1) << 20;  // positions (max_len), tokens per sequence
inline constexpr int64_t kMaxWidth = int64_t(1) << 16;   // d_model; d_ff up to 64 of these
inline constexpr int64_t kMaxLayers = 1024;

// One key a config section may hold and what it means: the table its reader
// accepts keys from, and `keystone config --defaults` prints beside them.
struct KeyDoc {
  std::string key, doc;
};
// The key of `known` nearest to `key` by edit distance when `key` is a near
// miss of it (a third of its letters or fewer differ), else "".
std::string nearest_key(const std::string& key, const std::vector<std::string>& known);

struct ModelConfig {
  // --- every model ---
  std::string model = "decoder_lm";  // decoder_lm | encoder_classifier | seq2seq
  int64_t d_model = 256;
  int64_t d_ff = 0;       // 0: 4 * d_model
  int64_t layers = 4;     // decoder_lm, encoder_classifier
  int64_t max_len = 512;  // longest sequence (positions table size)
  double dropout = 0.1;
  bool pre_norm = true;  // seq2seq defaults to post-LN (Vaswani et al.) unless set
  nn::Activation activation = nn::Activation::GELU;
  std::string positions = "learned";  // learned | sinusoidal (seq2seq default: sinusoidal)
  nn::AttentionConfig attention;      // d_model is filled in from d_model
  // "head_dim": "seq" sets the head size to max_len (Bhojanapalli et al.'s p = n)

  // A tied table (decoder_lm tie_embeddings, seq2seq share_embeddings) is
  // both the input lookup and the output layer. With this on, the lookups
  // enter the model with their features reversed (a fixed permutation, so
  // nothing is lost): otherwise an untrained model's state, still mostly its
  // own √d-scaled input row, gives the current token a logit near √d and the
  // first loss starts far above ln V (10.9 nats against 9.58 on the Brown
  // LM); reversed, the first loss is ln V + 0.4 and training is better at
  // every evaluation measured (README, "Configs and measured runs"). Run
  // folders from before this key mean false (tools/train/run_dir.h).
  bool tied_lookup_reversed = true;

  // --- decoder_lm and encoder_classifier ---
  int64_t vocab_size = 0;       // required
  bool tie_embeddings = false;  // decoder_lm: output layer shares the token embedding
  int64_t pad_id = -1;          // < 0: no padding token

  // --- encoder_classifier ---
  int64_t num_classes = 0;       // required
  std::string pooling = "mean";  // mean | cls (a learned [CLS] vector is prepended)
  bool dual = false;             // two documents encoded by one shared encoder, [u, v, |u-v|, u*v] -> head
  std::string head = "linear";   // linear: Linear(d, C); mlp: Linear(d, d_ff) -> ReLU -> Linear(d_ff, C),
                                 // the LRA code's classifier (not with dual, which has its own)
  double embedding_std = 0.0;    // > 0: token and learned position tables drawn from N(0, std²) (the
                                 // LRA code's 0.02); 0: the layers' own N(0, 1)

  // --- seq2seq ---
  int64_t src_vocab_size = 0;  // required
  int64_t tgt_vocab_size = 0;  // required
  int64_t encoder_layers = 2;
  int64_t decoder_layers = 2;
  bool share_embeddings = false;  // needs src_vocab_size == tgt_vocab_size
  double label_smoothing = 0.0;
  int64_t bos_id = 1, eos_id = 2;  // seq2seq pad_id defaults to 0

  int64_t resolved_d_ff() const { return d_ff > 0 ? d_ff : 4 * d_model; }
  nlohmann::json to_json() const;  // the resolved config, every key explicit
};

// Parses and validates; throws ks::Error("config: <prefix><key>: <problem>"),
// `prefix` naming the section where it is one of a training config
// ("model."); an unknown key gets the nearest valid one as a suggestion.
ModelConfig parse_model_config(const nlohmann::json& j, const std::string& prefix = "");

// The keys a model family takes, the attention section's among them as
// "attention.<key>", each with its meaning: the table parse_model_config
// accepts keys from. An unknown family is an error.
std::vector<KeyDoc> model_keys(const std::string& family);

}  // namespace ks::models
