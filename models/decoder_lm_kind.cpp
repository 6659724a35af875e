// models/decoder_lm_kind.cpp — the "decoder_lm" kind's descriptor (models/kind.h):
// its keys with their meanings, its checks, its factory, and the data it trains
// on (language-model windows). Not here: the network (models/decoder_lm.h).
#include "models/decoder_lm.h"
#include "models/kind.h"
#include "models/shared.h"

namespace ks::models {
namespace {

std::shared_ptr<Model> make_decoder_lm(const ModelConfig& cfg) { return std::make_shared<DecoderLM>(cfg); }

}  // namespace

KS_REGISTER_MODEL({
    .name = "decoder_lm",
    .task = "language_model",
    .task_default = true,
    .keys = {{"layers", "decoder layers"},
             {"vocab_size", "token ids (the data's vocabulary)"},
             {"tie_embeddings", "the output layer shares the token embedding"},
             {"tied_lookup_reversed",
              "a tied table's lookups enter with their features reversed (a better first loss)"},
             {"tied_lookup_scaled",
              "a tied table's lookups are scaled by sqrt(d_model) (false: as they are, as GPT-2's and Llama's)"},
             {"pad_id", "the padding token's id; -1: none"},
             {"fused_loss",
              "output layer and loss in chunks of rows, never the whole batch's logits: less memory; "
              "float32 results agree to round-off, not bit for bit"}},
    .validate = check_token_model_keys,
    .make = make_decoder_lm,
    .stored_defaults = {{"tied_lookup_reversed", false}},  // ModelConfig::tied_lookup_reversed
});

}  // namespace ks::models
