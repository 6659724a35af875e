// tests/tools/test_model_kind.cpp — a model kind defined in this file alone,
// registered as the built-in kinds are (KS_REGISTER_MODEL, models/kind.h), trains and
// evaluates through tools/train/task.h: the tools call the kind's own methods
// (models::Model::predict and loss), they do not list kinds. If they went
// back to listing them, batch_loss and evaluate would have no case for this
// one and these tests would fail.
//
// The kind: a bigram language model, logits of the next token = a (V, V)
// table's row of the current token, small enough that its loss and accuracy
// are known in closed form.
// Not here: the built-in kinds' own tests (tests/models/), decoding.
#include <doctest/doctest.h>

#include <cmath>
#include <numbers>

#include "autograd/engine.h"
#include "core/factory.h"
#include "datasets/dataset.h"
#include "datasets/loader.h"
#include "datasets/tokenizer.h"
#include "models/model.h"
#include "nn/layers.h"
#include "nn/optim.h"
#include "ops/view.h"
#include "tools/train/task.h"

using namespace ks;
using namespace ks::tools;

namespace {

constexpr int64_t kVocab = 260;  // the byte tokenizer's ids: 4 specials + 256 bytes

class BigramLM : public models::Model {
 public:
  explicit BigramLM(const models::ModelConfig& cfg) : Model(cfg, "BigramLM") {
    table = register_module("table", std::make_shared<nn::Embedding>(cfg.vocab_size, cfg.vocab_size));
  }
  models::ModelCost cost(int64_t) const override { return {.params = num_parameters()}; }
  // tokens (B, T) -> logits (B·T, V) against targets (B·T), pad targets
  // ignored. The training loss is Model's default (their mean cross-entropy).
  models::Predictions predict(const models::Batch& b) override {
    return {reshape(table->forward(b.tokens), {-1, config.vocab_size}), reshape(b.targets, {-1}), config.pad_id};
  }
  std::shared_ptr<nn::Embedding> table;
};

std::shared_ptr<models::Model> make_bigram_lm(const models::ModelConfig& cfg) {
  return std::make_shared<BigramLM>(cfg);
}
KS_REGISTER_MODEL({.name = "test_bigram_lm",
                   .task = "language_model",
                   .keys = {{"vocab_size", "token ids"}, {"pad_id", "the padding id"}},
                   .make = make_bigram_lm});

std::shared_ptr<models::Model> bigram_lm() {
  models::ModelConfig c;
  c.model = "test_bigram_lm";
  c.vocab_size = kVocab;
  c.pad_id = data::kPadId;
  manual_seed(3);
  return models::build_model(c);
}

// Byte-tokenizer ids of a string (id = 4 + byte).
std::vector<int32_t> bytes_of(const std::string& s) {
  std::vector<int32_t> out;
  for (unsigned char c : s) out.push_back(int32_t(4 + c));
  return out;
}

// Language-model windows of runs of consecutive letters ("abcd": each target
// is its token + 1), of different lengths so that batches hold pad targets.
data::Dataset letter_runs() {
  data::Dataset d;
  d.task = data::Task::LanguageModel;
  d.vocab_size = d.target_vocab_size = kVocab;
  d.tokenizer = std::make_shared<data::ByteTokenizer>();
  for (const std::string text : {"abcdef", "klm", "pqrstuvw", "ghij", "xyz"}) {
    const std::vector<int32_t> ids = bytes_of(text);
    data::Example e;
    e.tokens.assign(ids.begin(), ids.end() - 1);
    e.target.assign(ids.begin() + 1, ids.end());
    d.examples.push_back(std::move(e));
  }
  return d;
}

// Every target of letter_runs(): each text's length - 1.
constexpr int64_t kPredictions = 5 + 2 + 7 + 3 + 2;

// The table with logit `a` at (t, t + 1) for every t and 0 elsewhere.
void set_successor_table(models::Model& model, float a) {
  std::vector<float> w(size_t(kVocab * kVocab), 0.0f);
  for (int64_t t = 0; t + 1 < kVocab; ++t) w[size_t(t * kVocab + t + 1)] = a;
  model.load_state_dict({{"table.weight", from_vector(w, {kVocab, kVocab})}});
}

}  // namespace

TEST_CASE("model kind: a kind registered in a test file is built by name") {
  auto model = bigram_lm();
  REQUIRE(model != nullptr);
  CHECK(model->config.model == "test_bigram_lm");
  CHECK(model->cost(4).params == kVocab * kVocab);
}

TEST_CASE("model kind: batch_loss is the new kind's loss, its pad targets ignored, and it trains") {
  auto model = bigram_lm();
  const data::Dataset d = letter_runs();
  data::DataLoader loader(std::make_shared<const data::Dataset>(d), {.batch_size = 5, .shuffle = false});
  const data::Batch batch = *loader.next();
  REQUIRE(batch_predictions(*model, batch) == kPredictions);  // the batch is padded past the shorter texts

  // A zero table predicts uniformly: ln V per prediction, whatever the padding.
  model->load_state_dict({{"table.weight", zeros({kVocab, kVocab})}});
  CHECK(batch_loss(*model, batch).item<double>() == doctest::Approx(std::log(double(kVocab))).epsilon(1e-6));
  const double a = 4;
  set_successor_table(*model, float(a));
  const double want = std::log(std::exp(a) + double(kVocab - 1)) - a;  // -log softmax at the successor
  CHECK(batch_loss(*model, batch).item<double>() == doctest::Approx(want).epsilon(1e-6));

  // Gradients reach the kind's parameters through the tools' loss.
  model->load_state_dict({{"table.weight", zeros({kVocab, kVocab})}});
  nn::SGD opt(model->parameters(), {.lr = 50});
  const double first = batch_loss(*model, batch).item<double>();
  for (int step = 0; step < 5; ++step) {
    opt.zero_grad();
    backward(batch_loss(*model, batch));
    opt.step();
  }
  CHECK(batch_loss(*model, batch).item<double>() < 0.5 * first);
}

TEST_CASE("model kind: evaluate scores the new kind's predictions, with bits per byte on a language-model split") {
  auto model = bigram_lm();
  const double a = 4;
  set_successor_table(*model, float(a));
  const data::Dataset d = letter_runs();
  const EvalResult r = evaluate(*model, d, {.batch_size = 2});
  CHECK(r.predictions == kPredictions);
  CHECK(r.accuracy == 1.0);  // every argmax is the successor
  CHECK(r.loss == doctest::Approx(std::log(std::exp(a) + double(kVocab - 1)) - a).epsilon(1e-6));
  // Each byte token adds one byte, so bits per byte are the loss in bits.
  CHECK(r.bytes == kPredictions);
  CHECK(r.bpb == doctest::Approx(r.loss / std::numbers::ln2).epsilon(1e-9));
  CHECK(r.exact_match == -1);  // it does not decode sources
}
