// models/encoder_classifier_kind.cpp — the "encoder_classifier" kind's
// descriptor (models/kind.h): the shared keys it takes with their meanings,
// its own options (EncoderClassifierOptions: parsed, documented and checked
// here), its checks, its factory, and the data it trains on (a sequence, or
// two, and a label). Not here: the network (models/encoder_classifier.h).
#include "models/encoder_classifier.h"
#include "models/kind.h"
#include "models/shared.h"
#include "nn/user_input.h"

namespace ks::models {

EncoderClassifierOptions EncoderClassifierOptions::parse(const nlohmann::json& section, const std::string& prefix) {
  EncoderClassifierOptions o;
  nn::read_json_key(section, "num_classes", o.num_classes, prefix);
  nn::read_json_key(section, "pooling", o.pooling, prefix);
  nn::read_json_key(section, "dual", o.dual, prefix);
  nn::read_json_key(section, "head", o.head, prefix);
  nn::read_json_key(section, "embedding_std", o.embedding_std, prefix);
  return o;
}

std::vector<KeyDoc> EncoderClassifierOptions::option_keys() {
  return {{"num_classes", "the classes the head predicts (the data's)"},
          {"pooling", "mean | cls (a learned [CLS] vector is prepended)"},
          {"dual", "two documents through one shared encoder, [u, v, |u-v|, u*v] to the head"},
          {"head", "linear: Linear(d, C); mlp: Linear(d, d_ff), ReLU, Linear(d_ff, C) (the LRA code's; not with dual)"},
          {"embedding_std",
           "> 0: token and learned position tables drawn from N(0, std^2) (the LRA code's 0.02); "
           "0: N(0, 1)"}};
}

nlohmann::json EncoderClassifierOptions::to_json() const {
  return {{"num_classes", num_classes},
          {"pooling", pooling},
          {"dual", dual},
          {"head", head},
          {"embedding_std", embedding_std}};
}

void EncoderClassifierOptions::validate(const ModelConfig&, const std::string& p) const {
  check_at_most(num_classes, kMaxVocabSize, p, "num_classes");
  KS_CHECK(num_classes >= 2, "config: ", p, "num_classes: need at least 2 classes, got ", num_classes);
  KS_CHECK(pooling == "mean" || pooling == "cls", "config: ", p, "pooling: expected mean or cls, got '", pooling, "'");
  KS_CHECK(head == "linear" || head == "mlp", "config: ", p, "head: expected linear or mlp, got '", head, "'");
  KS_CHECK(!(dual && head == "mlp"), "config: ", p,
           "head: mlp is for a single document; a dual model has its own two-layer head");
  KS_CHECK(embedding_std >= 0 && embedding_std <= 10, "config: ", p, "embedding_std: must be in [0, 10], got ",
           embedding_std);
}

namespace {

std::shared_ptr<Model> make_encoder_classifier(const ModelConfig& cfg) {
  return std::make_shared<EncoderClassifier>(cfg);
}

int64_t cls_position(const ModelConfig& cfg) {
  return cfg.options_as<EncoderClassifierOptions>().pooling == "cls" ? 1 : 0;
}

}  // namespace

KS_REGISTER_MODEL(with_model_options<EncoderClassifierOptions>({
    .name = "encoder_classifier",
    .task = "classification",
    .task_default = true,
    .keys = {{"layers", "encoder layers"},
             {"vocab_size", "token ids (the data's vocabulary)"},
             {"pad_id", "the padding token's id; -1: none"}},
    .validate = check_token_model_keys,
    .make = make_encoder_classifier,
    .extra_positions = cls_position,
}));

}  // namespace ks::models
