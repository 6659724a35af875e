// models/decoder_lm_kind.cpp — the "decoder_lm" kind's descriptor (models/kind.h):
// the shared keys it takes with their meanings, its own options
// (DecoderLmOptions: parsed, documented and checked here), its checks, its
// factory, and the data it trains on (language-model windows).
// Not here: the network (models/decoder_lm.h).
#include "models/decoder_lm.h"
#include "models/kind.h"
#include "models/shared.h"
#include "nn/user_input.h"

namespace ks::models {

DecoderLmOptions DecoderLmOptions::parse(const nlohmann::json& section, const std::string& prefix) {
  DecoderLmOptions o;
  nn::read_json_key(section, "tie_embeddings", o.tie_embeddings, prefix);
  nn::read_json_key(section, "tied_lookup_scaled", o.tied_lookup_scaled, prefix);
  nn::read_json_key(section, "fused_loss", o.fused_loss, prefix);
  return o;
}

std::vector<KeyDoc> DecoderLmOptions::option_keys() {
  return {{"tie_embeddings", "the output layer shares the token embedding"},
          {"tied_lookup_scaled",
           "a tied table's lookups are scaled by sqrt(d_model) (false: as they are, as GPT-2's and Llama's)"},
          {"fused_loss",
           "output layer and loss in chunks of rows, never the whole batch's logits: less memory; "
           "float32 results agree to round-off, not bit for bit"}};
}

nlohmann::json DecoderLmOptions::to_json() const {
  return {{"tie_embeddings", tie_embeddings}, {"tied_lookup_scaled", tied_lookup_scaled}, {"fused_loss", fused_loss}};
}

void DecoderLmOptions::validate(const ModelConfig&, const std::string&) const {}  // every value of a switch is valid

namespace {

std::shared_ptr<Model> make_decoder_lm(const ModelConfig& cfg) { return std::make_shared<DecoderLM>(cfg); }

}  // namespace

KS_REGISTER_MODEL(with_model_options<DecoderLmOptions>({
    .name = "decoder_lm",
    .task = "language_model",
    .task_default = true,
    .keys = {{"layers", "decoder layers"},
             {"vocab_size", "token ids (the data's vocabulary)"},
             {"tied_lookup_reversed",
              "a tied table's lookups enter with their features reversed (a better first loss)"},
             {"pad_id", "the padding token's id; -1: none"}},
    .validate = check_token_model_keys,
    .make = make_decoder_lm,
    .stored_defaults = {{"tied_lookup_reversed", false}},  // ModelConfig::tied_lookup_reversed
}));

}  // namespace ks::models
