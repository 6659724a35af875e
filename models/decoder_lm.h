// models/decoder_lm.h — the decoder-only language model ("decoder_lm").
//
//   tokens (B, T) -> Embedding (pad_id as padding_idx) + positions (learned, sinusoidal; rope: none, it turns q and k)
//     -> config.layers × nn::DecoderLayer (causal self-attention of config.attention, no
//        cross-attention) -> final LayerNorm (pre-LN only; post-LN layers end normalised)
//     -> logits (B, T, V): a Linear(d, V) without bias, or, with tie_embeddings,
//        h · Eᵀ with E the token embedding's own weight (one tensor, two uses).
// Tied tables are initialised N(0, 1/d) and their lookups scaled by √d
// (Vaswani et al. §3.4), so both uses start at unit scale, and the lookups
// enter with their features reversed (tied_lookup_reversed, models/config.h)
// so that an untrained state does not point at its own token's output row;
// untied ones are N(0, 1) and not scaled.
//
// Batches are right-padded: the causal mask already keeps pad tokens at the
// end from affecting earlier positions, and loss() ignores pad targets, so no
// key-padding mask is applied. Generation runs through one
// nn::DecoderLayerCache per layer, so each new token costs one position.
// Not here: tokenizers, the training loop, beam search.
#pragma once

#include <memory>
#include <vector>

#include "models/model.h"
#include "models/sampling.h"
#include "models/shared.h"
#include "nn/container.h"
#include "nn/transformer.h"

namespace ks::models {

class DecoderLM : public Model {
 public:
  explicit DecoderLM(const ModelConfig& cfg);

  // tokens int64 (B, T) -> logits (B, T, V). With `caches` (an empty vector is
  // sized to one cache per layer) the tokens continue the cached sequence:
  // their positions start at the cached length and they attend to it too.
  Tensor forward(const Tensor& tokens, std::vector<nn::DecoderLayerCache>* caches = nullptr);
  // Mean cross-entropy of forward(tokens) against targets (B, T) int64,
  // positions whose target is pad_id ignored (when pad_id >= 0).
  Tensor loss(const Tensor& tokens, const Tensor& targets);
  // Model's batch methods: forward(tokens) as (B·T, V) against targets (B·T),
  // pad_id ignored; loss(tokens, targets).
  Predictions predict(const Batch& batch) override;
  Tensor loss(const Batch& batch) override;
  // prompt (1 or B, T0) int64 -> (B, T0 + max_new_tokens): the prompt followed
  // by the chosen tokens. Runs without gradients and in eval mode (the
  // module's mode is restored afterwards); the whole output must fit max_len.
  Tensor generate(const Tensor& prompt, int64_t max_new_tokens, const SamplingOptions& opts = {});

  // Forward FLOPs: every Linear 2·in·out per token, attention by
  // nn::attention_cost (causal), the output layer included (tied or not);
  // embedding lookups, position adds, layer norms, activations, residual adds
  // and the softmax of the loss are not counted.
  ModelCost cost(int64_t seq_len) const override;

  std::shared_ptr<nn::Embedding> tok;
  PositionTable pos;
  std::shared_ptr<nn::ModuleList<nn::DecoderLayer>> layers;
  std::shared_ptr<nn::LayerNorm> ln_f;  // pre-LN only
  std::shared_ptr<nn::Linear> head;     // null when tie_embeddings
};

}  // namespace ks::models
