// models/decoder_lm.h — the decoder-only language model ("decoder_lm").
//
//   tokens (B, T) -> Embedding (pad_id as padding_idx) + positions (learned, sinusoidal; rope: none, it turns q and k)
//     -> config.layers × nn::DecoderLayer (causal self-attention of config.attention, no
//        cross-attention) -> final norm (pre-LN only; post-LN layers end normalised)
//     -> logits (B, T, V): a Linear(d, V) without bias, or, with tie_embeddings (DecoderLmOptions),
//        h · Eᵀ with E the token embedding's own weight (one tensor, two uses).
// Tied tables are initialised N(0, 1/d) and their lookups scaled by √d
// (Vaswani et al. §3.4), so both uses start at unit scale, and the lookups
// enter with their features reversed (ModelConfig::tied_lookup_reversed)
// so that an untrained state does not point at its own token's output row;
// untied ones are N(0, 1) and not scaled. An imported GPT-2 or Llama tied
// table has neither the scaling nor the reversal (tied_lookup_scaled and
// tied_lookup_reversed false).
//
// Training batches are right-padded: the causal mask already keeps pad tokens
// at the end from affecting earlier positions, and loss() ignores pad targets,
// so no key-padding mask is applied. Generation runs through one
// nn::DecoderLayerCache per layer, so each new token costs one position;
// beam search reorders those caches by the beams' parents
// (models/beam_search.h). Batched generation of prompts of different lengths
// (generate_batch, models/decoder_lm_batch.cpp) left-pads them instead
// (LeftPadding): the pads are masked as keys and skipped by the position
// table. Not here: tokenizers, the training loop, the beam bookkeeping, the
// sampling rules (models/sampling.h).
#pragma once

#include <memory>
#include <vector>

#include "models/beam_search.h"
#include "models/model.h"
#include "models/sampling.h"
#include "models/shared.h"
#include "models/stop_strings.h"
#include "nn/container.h"
#include "nn/transformer.h"

namespace ks::models {

// decoder_lm's own keys (models/kind.h with_model_options), read typed by
// config.options_as<DecoderLmOptions>(); parsed, documented and checked in
// models/decoder_lm_kind.cpp. The shared keys it takes (layers, vocab_size,
// pad_id, tied_lookup_reversed) are ModelConfig's. A kind built on the
// decoder LM (a plugin's) derives its options from these.
struct DecoderLmOptions : ModelOptions {
  bool tie_embeddings = false;  // the output layer shares the token embedding
  // false leaves a tied table's lookups unscaled, as GPT-2 and Llama use
  // theirs (what `keystone import --from hf` makes of a tied checkpoint);
  // true, the default and every earlier run's, scales them by √d.
  bool tied_lookup_scaled = true;
  bool fused_loss = false;  // output layer + cross-entropy chunked, no (B·T, V) logits (ops/linear_cross_entropy.h)

  static DecoderLmOptions parse(const nlohmann::json& section, const std::string& prefix);
  static std::vector<KeyDoc> option_keys();
  nlohmann::json to_json() const override;
  void validate(const ModelConfig& cfg, const std::string& prefix) const override;
};

// Rows of different lengths run together, each left-padded to the longest:
// row b's first pads[b] slots are padding. They are masked as keys
// (key_padding; the caches keep it for later calls) and get no position
// table row, so row b's token in slot s sits at position s − pads[b], as it
// would alone. Slot-based positions inside attention (rope, ALiBi) depend
// only on distances, which the pads do not change.
struct LeftPadding {
  std::vector<int64_t> pads;  // per row, >= 0
  Tensor key_padding;         // (B, T) bool over this call's tokens, true at pads; undefined: none among them
};

// One row of generate_batch: a prompt and what is the row's own.
struct BatchPrompt {
  std::vector<int64_t> prompt;  // non-empty token ids
  uint64_t seed = 0;            // the row's random stream, Generator(seed); unused when greedy
  StopStrings stop;             // the row's stop strings with its decoding; none: no stop strings
};

// What generate_batch made of one row: the new tokens, the prompt excluded;
// the token that ended the row (eos, or the one completing a stop string) is
// the last of them.
struct Continuation {
  enum class End { length, eos, stop };
  std::vector<int64_t> tokens;
  End end = End::length;  // length: max_new_tokens reached
};

class DecoderLM : public Model {
 public:
  explicit DecoderLM(const ModelConfig& cfg);

  // tokens int64 (B, T) -> logits (B, T, V). With `caches` (an empty vector is
  // sized to one cache per layer) the tokens continue the cached sequence:
  // their positions start at the cached length and they attend to it too.
  // With `left` the rows are left-padded (LeftPadding).
  Tensor forward(const Tensor& tokens, std::vector<nn::DecoderLayerCache>* caches = nullptr,
                 const LeftPadding* left = nullptr);
  // forward's logits of the last position only, (B, V): what decoding reads
  // after a prompt's pass, without the output layer's product for the
  // other T - 1 positions (a fifth of a 128-token prompt's multiply-adds at
  // GPT-2-small size with a 32,000 vocabulary).
  Tensor forward_last(const Tensor& tokens, std::vector<nn::DecoderLayerCache>* caches = nullptr,
                      const LeftPadding* left = nullptr);
  // The states the output layer reads, (B, T, d): forward without its last
  // product. forward = features · output_weight()ᵀ.
  Tensor features(const Tensor& tokens, std::vector<nn::DecoderLayerCache>* caches = nullptr,
                  const LeftPadding* left = nullptr);
  // (V, d): the head's weight, or the token table when tied; undefined when
  // that weight is held as Q8_0 blocks (nn::Q8WeightScope).
  const Tensor& output_weight() const { return head ? head->weight : tok->weight; }
  // Where the model runs: the output weight's device (the CPU's for Q8_0 weights).
  Device device() const { return output_weight().defined() ? output_weight().device() : Device::cpu(); }
  // Mean cross-entropy of forward(tokens) against targets (B, T) int64,
  // positions whose target is kNoTarget (models/batch.h) ignored, and those
  // whose target is pad_id too (when pad_id >= 0: the padding token is
  // never a target). With
  // DecoderLmOptions::fused_loss the output layer and the loss run chunked
  // (ops/linear_cross_entropy.h): the (B·T, V) logits are never formed.
  Tensor loss(const Tensor& tokens, const Tensor& targets);
  // Model's batch methods: forward(tokens) as (B·T, V) against targets (B·T),
  // no-targets ignored as in loss; loss(tokens, targets).
  Predictions predict(const Batch& batch) override;
  Tensor loss(const Batch& batch) override;
  // targets with kNoTarget where they hold pad_id (when pad_id >= 0): what the loss scores.
  Tensor scored_targets(const Tensor& targets) const;
  // prompt (1 or B, T0) int64 -> (B, T0 + max_new_tokens): the prompt followed
  // by the chosen tokens. Runs without gradients and in eval mode (the
  // module's mode is restored afterwards); the whole output must fit max_len.
  // The repetition penalty sees each row's prompt and output so far. With
  // stop strings the loop ends early, after the step at which every row's
  // generated text contains one (a row that stopped before the others goes on
  // being sampled): the result is (B, T0 + steps run), and the caller cuts
  // each row's text with stop.cut (models/stop_strings.h).
  Tensor generate(const Tensor& prompt, int64_t max_new_tokens, const SamplingOptions& opts = {},
                  const StopStrings& stop = {});
  // Batched generation on the KV caches: the prompts, left-padded to the
  // longest, run in one pass, then every step runs one position for each row
  // still going. A row ends independently, at eos_id (-1: never), at a stop
  // string of its own (the generated text contains one) or after
  // max_new_tokens; an ended row leaves the batch (its caches are dropped), so
  // it costs nothing more. Each row samples with opts (whose generator must be
  // null) from its own Generator(seed), one draw per step as generate draws
  // for a single row, so row i's continuation is that of generate on its
  // prompt alone with Generator(rows[i].seed) (to float32 round-off of the
  // logits, which the batch's padding and sizes may change in the last bits),
  // whatever the other rows are. The longest prompt + max_new_tokens must fit
  // max_len. Eval mode and no gradients, as generate.
  std::vector<Continuation> generate_batch(const std::vector<BatchPrompt>& rows, int64_t max_new_tokens,
                                           const SamplingOptions& opts = {}, int64_t eos_id = -1);
  // Beam search (models/beam_search.h) continuing each prompt row (B, T0) by
  // up to max_new_tokens tokens, on the KV caches: the prompt runs once per
  // row, its caches are copied to the row's beams, and every later step runs
  // one position per beam after the caches follow the beams' parents. A
  // hypothesis ends at eos_id (-1: none, every hypothesis has
  // max_new_tokens tokens). beam_size 1 is greedy decoding. The best
  // hypothesis of each row; its tokens exclude the prompt (and eos).
  std::vector<Hypothesis> beam_search(const Tensor& prompt, int64_t max_new_tokens, int64_t beam_size,
                                      double length_penalty = 0.0, int64_t eos_id = -1);

  // Forward FLOPs: every Linear 2·in·out per token, attention by
  // nn::attention_cost (causal), the output layer included (tied or not);
  // embedding lookups, position adds, layer norms, activations, residual adds
  // and the softmax of the loss are not counted.
  ModelCost cost(int64_t seq_len) const override;

  std::shared_ptr<nn::Embedding> tok;
  PositionTable pos;
  std::shared_ptr<nn::ModuleList<nn::DecoderLayer>> layers;
  std::shared_ptr<nn::Norm> ln_f;    // pre-LN only
  std::shared_ptr<nn::Linear> head;  // null when tie_embeddings
};

}  // namespace ks::models
