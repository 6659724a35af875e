// models/encoder_classifier_kind.cpp — the "encoder_classifier" kind's
// descriptor (models/kind.h): its keys with their meanings, its checks, its
// factory, and the data it trains on (a sequence, or two, and a label).
// Not here: the network (models/encoder_classifier.h).
#include "models/encoder_classifier.h"
#include "models/kind.h"
#include "models/shared.h"

namespace ks::models {
namespace {

void validate(const ModelConfig& m, const std::string& p) {
  check_token_model_keys(m, p);
  KS_CHECK(m.num_classes >= 2, "config: ", p, "num_classes: need at least 2 classes, got ", m.num_classes);
  KS_CHECK(m.pooling == "mean" || m.pooling == "cls", "config: ", p, "pooling: expected mean or cls, got '", m.pooling,
           "'");
  KS_CHECK(m.head == "linear" || m.head == "mlp", "config: ", p, "head: expected linear or mlp, got '", m.head, "'");
  KS_CHECK(!(m.dual && m.head == "mlp"), "config: ", p,
           "head: mlp is for a single document; a dual model has its own two-layer head");
  KS_CHECK(m.embedding_std >= 0 && m.embedding_std <= 10, "config: ", p, "embedding_std: must be in [0, 10], got ",
           m.embedding_std);
}

std::shared_ptr<Model> make_encoder_classifier(const ModelConfig& cfg) {
  return std::make_shared<EncoderClassifier>(cfg);
}

int64_t cls_position(const ModelConfig& cfg) { return cfg.pooling == "cls" ? 1 : 0; }

}  // namespace

KS_REGISTER_MODEL({
    .name = "encoder_classifier",
    .task = "classification",
    .task_default = true,
    .keys = {{"layers", "encoder layers"},
             {"vocab_size", "token ids (the data's vocabulary)"},
             {"pad_id", "the padding token's id; -1: none"},
             {"num_classes", "the classes the head predicts (the data's)"},
             {"pooling", "mean | cls (a learned [CLS] vector is prepended)"},
             {"dual", "two documents through one shared encoder, [u, v, |u-v|, u*v] to the head"},
             {"head",
              "linear: Linear(d, C); mlp: Linear(d, d_ff), ReLU, Linear(d_ff, C) (the LRA code's; not with dual)"},
             {"embedding_std",
              "> 0: token and learned position tables drawn from N(0, std^2) (the LRA code's 0.02); "
              "0: N(0, 1)"}},
    .validate = validate,
    .make = make_encoder_classifier,
    .extra_positions = cls_position,
});

}  // namespace ks::models
