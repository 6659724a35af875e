// tests/models/test_initial_loss.cpp — every model kind with every attention
// family starts near the loss of a uniform guess, ln V (or ln C for a
// classifier): an untrained model should know nothing.
//
// The bound: within 0.5 nats of ln V for a separate output layer, whose
// logits have variance 1/3 at init (U(±1/√d) weights); within 0.8 for a tied
// table, whose N(0, 1/d) rows give unit-variance logits, which cost about
// half a nat over ln V (E[logsumexp] of V standard normals is ln V + 1/2).
//
// A tied table starts near ln V because its lookups enter reversed
// (models/config.h tied_lookup_reversed). Without that, a state still close
// to its own √d-scaled input row gives its own token a logit near √d: 10.9
// nats against ln V = 9.58 for brown_lm_softmax8 at d = 256, 1.5 to 2.4
// nats over ln V at d = 64 here. The last case checks that this is what the
// reversal removes, so the test fails if it stops doing so.
#include "support/testing.h"

#include <cmath>

#include "core/factory.h"
#include "core/random.h"
#include "models/decoder_lm.h"
#include "models/encoder_classifier.h"
#include "models/seq2seq.h"

using namespace ks;
using json = nlohmann::json;

namespace {

const char* kFamilies[] = {"softmax", "fixed", "mgk", "smgk", "linear", "mlk"};

json attention_of(const std::string& family) {
  json a = {{"type", family}, {"heads", 4}};
  if (family == "fixed") a["head_dim"] = 32;  // larger than d/h = 16: the family's point
  return a;
}

// Random ids in [1, V) (0 is the pad), (B, T).
Tensor random_tokens(int64_t B, int64_t T, int64_t V, uint64_t seed) {
  Generator g(seed);
  return randint(1, V, {B, T}, {.dtype = kInt64}, &g);
}

// The first loss in nats must be within 0.5 of ln V, 0.8 with a tied table
// (see the file comment).
void check_near_uniform(double loss, int64_t V, const std::string& what, bool tied = false) {
  INFO(what, ": first loss ", loss, ", ln V = ", std::log(double(V)));
  CHECK(std::isfinite(loss));
  CHECK(std::abs(loss - std::log(double(V))) < (tied ? 0.8 : 0.5));
}

}  // namespace

TEST_CASE("decoder_lm starts near ln V with every family, pre- or post-LN, tied or not") {
  const int64_t V = 66, B = 4, T = 48;
  for (const char* family : kFamilies)
    for (bool tied : {true, false})
      for (bool pre_norm : {true, false}) {
        manual_seed(7);
        json j = {{"model", "decoder_lm"}, {"vocab_size", V}, {"d_model", 64},
                  {"layers", 2},           {"max_len", T},    {"tie_embeddings", tied},
                  {"pre_norm", pre_norm},  {"pad_id", 0},     {"attention", attention_of(family)}};
        auto model = std::dynamic_pointer_cast<models::DecoderLM>(models::build_model(models::parse_model_config(j)));
        REQUIRE(model);
        model->eval();
        Tensor x = random_tokens(B, T + 1, V, 11);
        Tensor in = contiguous(slice(x, 1, 0, T)), out = contiguous(slice(x, 1, 1, T + 1));
        check_near_uniform(model->loss(in, out).item<double>(), V,
                           str("decoder_lm ", family, tied ? " tied" : " untied", pre_norm ? " pre-LN" : " post-LN"),
                           tied);
      }
}

TEST_CASE("seq2seq starts near ln V with every family, shared embeddings or not") {
  const int64_t V = 40, B = 4, S = 20, T = 16;
  for (const char* family : kFamilies)
    for (bool shared : {true, false}) {
      manual_seed(7);
      json j = {{"model", "seq2seq"}, {"src_vocab_size", V},        {"tgt_vocab_size", V},
                {"d_model", 64},      {"encoder_layers", 2},        {"decoder_layers", 2},
                {"max_len", 32},      {"share_embeddings", shared}, {"attention", attention_of(family)}};
      auto model = std::dynamic_pointer_cast<models::Seq2Seq>(models::build_model(models::parse_model_config(j)));
      REQUIRE(model);
      model->eval();
      Tensor src = random_tokens(B, S, V, 12), tgt = random_tokens(B, T + 1, V, 13);
      Tensor tgt_in = contiguous(slice(tgt, 1, 0, T)), tgt_out = contiguous(slice(tgt, 1, 1, T + 1));
      check_near_uniform(model->loss(src, tgt_in, tgt_out).item<double>(), V,
                         str("seq2seq ", family, shared ? " shared" : " separate"), shared);
    }
}

TEST_CASE("encoder_classifier starts near ln C with every family and pooling") {
  const int64_t V = 50, C = 10, B = 16, T = 24;
  for (const char* family : kFamilies)
    for (const char* pooling : {"mean", "cls"}) {
      manual_seed(7);
      json j = {{"model", "encoder_classifier"},
                {"vocab_size", V},
                {"num_classes", C},
                {"d_model", 64},
                {"layers", 2},
                {"max_len", T + 1},
                {"pooling", pooling},
                {"attention", attention_of(family)}};
      auto model =
          std::dynamic_pointer_cast<models::EncoderClassifier>(models::build_model(models::parse_model_config(j)));
      REQUIRE(model);
      model->eval();
      Tensor logits = model->forward(random_tokens(B, T, V, 14));  // (B, C)
      Generator g(15);
      Tensor labels = randint(0, C, {B}, {.dtype = kInt64}, &g);
      check_near_uniform(cross_entropy(logits, labels).item<double>(), C,
                         str("encoder_classifier ", family, " ", pooling));
    }
}

TEST_CASE("tied tables without the reversed lookup start far above ln V (what tied_lookup_reversed removes)") {
  const int64_t V = 66, B = 4, T = 48;
  double excess[2];
  for (bool reversed : {false, true}) {
    manual_seed(7);
    json j = {{"model", "decoder_lm"},
              {"vocab_size", V},
              {"d_model", 64},
              {"layers", 2},
              {"max_len", T},
              {"tie_embeddings", true},
              {"tied_lookup_reversed", reversed},
              {"pad_id", 0},
              {"attention", attention_of("softmax")}};
    auto model = std::dynamic_pointer_cast<models::DecoderLM>(models::build_model(models::parse_model_config(j)));
    model->eval();
    Tensor x = random_tokens(B, T + 1, V, 11);
    Tensor in = contiguous(slice(x, 1, 0, T)), out = contiguous(slice(x, 1, 1, T + 1));
    excess[reversed] = model->loss(in, out).item<double>() - std::log(double(V));
  }
  CHECK(excess[0] > 1.0);
  CHECK(excess[1] < 0.8);
}
