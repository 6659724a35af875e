// models/config.h — the JSON configuration of every model, with the keys
// every model shares documented here, and strict validation: an unknown key, a
// key that does not apply to the chosen model, or a bad value is rejected with a
// message naming the key (and the known key it is a near miss of).
//
//   {"model": "decoder_lm", "vocab_size": 8192, "d_model": 256, "layers": 4,
//    "attention": {"type": "mgk", "heads": 4, "head_dim": 32, "keys": 2}}
//
// Which keys beyond every model's a config may hold (the shared fields the
// kind takes and its own options' keys), their defaults where they differ,
// their checks and the kind's own options are the kind's descriptor's
// (models/kind.h), in the kind's own file; the parser here names no kind.
//
// Also here, for every config section (nn/json_section.h reads the others
// with them): KeyDoc, a key with its one-line meaning, and nearest_key, the
// "did you mean" of an unknown key.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "nn/attention/attention.h"
#include "nn/feed_forward.h"
#include "nn/norm.h"
#include "nn/positions/positions.h"
#include "nn/typed_options.h"

namespace ks::models {

// Upper bounds on the sizes that allocate, far above any model trained here,
// so that a mistyped size fails in validation with its key named, not as an
// allocation of terabytes.
inline constexpr int64_t kMaxVocabSize = int64_t(1)
                                         << 24;  // a model's ids (a tokenizer has its own cap, data::kMaxVocabSize)
inline constexpr int64_t kMaxLength = int64_t(1) << 20;  // positions (max_len), tokens per sequence
inline constexpr int64_t kMaxWidth = int64_t(1) << 16;   // d_model; d_ff up to 64 of these
inline constexpr int64_t kMaxLayers = 1024;

struct ModelConfig;

// A model kind's own options, defined beside the kind (decoder_lm's
// DecoderLmOptions in models/decoder_lm.h, a plugin kind's in the plugin, as
// an attention family has nn::AttentionOptions). The shared ModelConfig
// holds them opaquely; the kind reads them typed (ModelConfig::options_as).
// models/kind.h with_model_options makes a descriptor's parser from the type.
class ModelOptions {
 public:
  virtual ~ModelOptions() = default;
  // Every key of the options, explicit, as the model section holds it.
  virtual nlohmann::json to_json() const = 0;
  // Throws ks::Error("config: <prefix><key>: ..."); `cfg` gives the shared
  // fields the kind's rules may involve.
  virtual void validate(const ModelConfig& cfg, const std::string& prefix) const = 0;
};

// Every model's fields, then the few that several kinds and generic code
// share (a kind lists in its descriptor's keys those it takes), then the
// kind's own options: a built-in kind's keys (decoder_lm's tie_embeddings,
// seq2seq's bos_id, ...) are its options' fields, in its own files
// (models/decoder_lm.h DecoderLmOptions, ...), as a plugin kind's are.
struct ModelConfig {
  // --- every model ---
  std::string model = "decoder_lm";  // the kind (models/kind.h); the default is the language model
  int64_t d_model = 256;
  int64_t d_ff = 0;       // 0: the ff kind's rule (resolved_d_ff)
  int64_t max_len = 512;  // longest sequence (positions table size)
  double dropout = 0.1;
  bool pre_norm = true;  // a kind may default to post-LN (seq2seq, Vaswani et al.)
  nn::Activation activation = "gelu";
  std::string positions = "learned";  // a position kind (nn/positions/; a kind may default to sinusoidal)
  // The kind's options (rope_theta), parsed by the kind; null, or another
  // kind's (positions changed after parsing): the kind's defaults. Read
  // through position_kind().
  std::shared_ptr<const nn::Positions> position_options;
  nn::AttentionConfig attention;   // d_model is filled in from d_model
  std::string norm = "layernorm";  // every norm's kind (nn/norm.h)
  double norm_eps = 1e-5;          // every norm's eps
  std::string ff = "mlp";          // the feed-forward kind (nn/feed_forward.h)
  bool bias = true;                // false: no biases in attention projections, feed-forwards, heads, nor norms' shifts
  // "head_dim": "seq" sets the head size to max_len (Bhojanapalli et al.'s p = n)

  // --- shared by several kinds (each kind's descriptor lists those it takes) ---
  // Shared, not a kind's option, because generic code reads them for any
  // kind: the layer stack of decoder_lm and encoder_classifier (and a plugin
  // kind built on them), the token ids the data fills in and generate, HF
  // import/export and the analyses check against, the padding id the
  // trainer and the batches use for every model, and what a tied table means
  // in the two kinds that tie one.
  int64_t layers = 4;
  int64_t vocab_size = 0;  // required by the kinds that take it
  int64_t pad_id = -1;     // < 0: no padding token (seq2seq's default is 0)
  // A tied table (decoder_lm tie_embeddings, seq2seq share_embeddings) is
  // both the input lookup and the output layer. With this on, the lookups
  // enter the model with their features reversed (a fixed permutation, so
  // nothing is lost): otherwise an untrained model's state, still mostly its
  // own √d-scaled input row, gives the current token a logit near √d and the
  // first loss starts far above ln V (10.9 nats against 9.58 on the Brown
  // LM); reversed, the first loss is ln V + 0.4 and training is better at
  // every evaluation measured (docs/configs.md, "Configs and measured runs"). Run
  // folders from before this key mean false (tools/train/run_dir.h).
  bool tied_lookup_reversed = true;

  // --- the kind's own options (ModelKind::parse_options); null: it has none ---
  std::shared_ptr<const ModelOptions> options;

  int64_t resolved_d_ff() const;  // d_ff, or the ff kind's hidden width for 0
  nn::NormConfig norm_config() const { return {norm, norm_eps, bias}; }
  // The descriptor of `positions` with position_options (its defaults when null).
  std::shared_ptr<const nn::Positions> position_kind() const;
  nlohmann::json to_json() const;  // the resolved config, every key explicit

  // The options as the kind's type T; T's defaults when none are set.
  // Options of another type are a programming error.
  template <class T> const T& options_as() const {
    return nn::typed_options<T>(options, "model '", model, "': its options are another kind's");
  }
  template <class T> ModelConfig& with_options(T value) {
    options = std::make_shared<const T>(std::move(value));
    return *this;
  }
  // Changes some of the kind's options: `edit` gets a copy of options_as<T>()
  // (T's defaults when none are set) that then replaces them.
  //   c.edit_options<DecoderLmOptions>([](auto& o) { o.tie_embeddings = true; });
  template <class T, class Edit> ModelConfig& edit_options(Edit edit) {
    T value = options_as<T>();
    edit(value);
    return with_options(std::move(value));
  }
};

// Keys every model gained after run folders were first written, each with the
// value that reproduces how such a run was built (for
// tools/train/run_dir.h upgrade_stored_config, beside a kind's stored_defaults).
const nlohmann::json& stored_model_defaults();

// For the kinds' checks: throw "config: <prefix><key>: must be positive, got v"
// and "config: <prefix><key>: at most m, got v".
void check_positive(int64_t v, const std::string& prefix, const char* key);
void check_at_most(int64_t v, int64_t most, const std::string& prefix, const char* key);
// Whether `key` names a shared ModelConfig field a kind may list among its
// keys (layers, vocab_size, pad_id, tied_lookup_reversed).
bool is_model_field(const std::string& key);

// Parses and validates; throws ks::Error("config: <prefix><key>: <problem>"),
// `prefix` naming the section where it is one of a training config
// ("model."); an unknown key gets the nearest valid one as a suggestion.
ModelConfig parse_model_config(const nlohmann::json& j, const std::string& prefix = "");

// The keys a model kind takes (every model's, the kind's, its options'), the
// attention section's among them as "attention.<key>", each with its
// meaning: the table parse_model_config accepts keys from. An unknown kind is
// an error.
std::vector<KeyDoc> model_keys(const std::string& family);

}  // namespace ks::models
