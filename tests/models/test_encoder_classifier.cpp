// tests/models/test_encoder_classifier.cpp — the encoder classifier: both
// poolings solve a generated long-range task (is the marker block at the start
// equal to the one at the end, 40-56 tokens apart?), the dual form learns a two-document task,
// padding is invisible, post-LN works, the cost report is checked by hand,
// config round trips and error texts.
//
// Under AddressSanitizer the training tests run a few steps and only check
// that the loss falls (the accuracy margins are checked in the Release build).
#include "support/testing.h"
#include "support/tiny_models.h"

#include <random>

#include "models/encoder_classifier.h"
#include "nn/optim.h"

using namespace ks;
using namespace ks::testing;
using json = nlohmann::json;

namespace {

// Ids: 0 pad, 1 and 2 the two marker values, 3..15 filler.
constexpr int64_t kVocab = 16;

// Sequences of random length in [48, 64], right-padded to 64: a block of four
// copies of one marker at the start and of one at the end of the real tokens,
// filler between (at least 40 tokens). Label 1 when the two markers are equal:
// the four combinations are equally likely, so chance is 50%, and neither
// block alone says anything about the label: the two must meet through
// attention. (With single markers instead of blocks the task has the same
// answer but its first-order gradient is nil, and a 2-layer model sits on the
// plateau for far longer than a unit test can wait.)
std::pair<Tensor, Tensor> marker_batch(int64_t B, std::mt19937_64& rng) {
  const int64_t T = 64;
  std::vector<int64_t> x(size_t(B * T), 0), y;
  for (int64_t b = 0; b < B; ++b) {
    const int64_t len = 48 + int64_t(rng() % 17);
    int64_t* row = x.data() + b * T;
    for (int64_t t = 1; t + 1 < len; ++t) row[t] = 3 + int64_t(rng() % 13);
    const int64_t first = 1 + int64_t(rng() % 2), last = 1 + int64_t(rng() % 2);
    for (int64_t k = 0; k < 4; ++k) {
      row[k] = first;
      row[len - 1 - k] = last;
    }
    y.push_back(first == last ? 1 : 0);
  }
  return {from_vector(x, {B, T}), from_vector(y, {B})};
}

// Two documents of 24 filler tokens, each with one marker (1 or 2) at a random
// position; label 1 when both documents carry the same marker.
std::tuple<Tensor, Tensor, Tensor> pair_batch(int64_t B, std::mt19937_64& rng) {
  const int64_t T = 24;
  std::vector<int64_t> a(size_t(B * T)), b(size_t(B * T)), y;
  for (int64_t i = 0; i < B; ++i) {
    for (auto* doc : {&a, &b}) {
      int64_t* row = doc->data() + i * T;
      for (int64_t t = 0; t < T; ++t) row[t] = 3 + int64_t(rng() % 13);
      row[rng() % T] = 1 + int64_t(rng() % 2);
    }
    auto marker = [&](const std::vector<int64_t>& doc) {
      for (int64_t t = 0; t < T; ++t)
        if (doc[size_t(i * T + t)] < 3) return doc[size_t(i * T + t)];
      return int64_t(0);
    };
    y.push_back(marker(a) == marker(b) ? 1 : 0);
  }
  return {from_vector(a, {B, T}), from_vector(b, {B, T}), from_vector(y, {B})};
}

models::ModelConfig classifier_config(const std::string& pooling) {
  models::ModelConfig c = tiny_model_config("encoder_classifier", kVocab, 32, 2, 65, 2);  // 64 tokens plus [CLS]
  c.edit_options<models::EncoderClassifierOptions>([&](auto& o) {
    o.num_classes = 2;
    o.pooling = pooling;
  });
  c.pad_id = 0;
  return c;
}

std::shared_ptr<models::EncoderClassifier> make_classifier(const models::ModelConfig& c, uint64_t seed = 1) {
  return seeded_model<models::EncoderClassifier>(c, seed);
}

double accuracy(const Tensor& logits, const Tensor& labels) {
  std::vector<int64_t> pred = argmax(logits, 1).to_vector<int64_t>(), y = labels.to_vector<int64_t>();
  int64_t right = 0;
  for (size_t i = 0; i < y.size(); ++i) right += pred[i] == y[i];
  return double(right) / double(y.size());
}

struct Trained {
  double first_loss, last_loss, test_accuracy;
};

// Adam on fresh batches from `make`; the last loss is the mean of the final 10 steps.
template <class Make, class Forward>
Trained train_classifier(models::EncoderClassifier& m, int steps, Make make, Forward fwd) {
  nn::Adam opt(m.parameters(), {.lr = 2e-3});
  std::mt19937_64 rng(5);
  Trained r{0, 0, 0};
  for (int s = 0; s < steps; ++s) {
    auto batch = make(32, rng);
    Tensor loss = cross_entropy(fwd(batch), std::get<std::tuple_size_v<decltype(batch)> - 1>(batch));
    if (s == 0) r.first_loss = loss.item();
    if (s >= steps - 10) r.last_loss += loss.item() / 10;
    backward(loss);
    opt.step();
    opt.zero_grad();
  }
  NoGradGuard g;
  m.eval();
  std::mt19937_64 test_rng(77);
  auto batch = make(256, test_rng);
  r.test_accuracy = accuracy(fwd(batch), std::get<std::tuple_size_v<decltype(batch)> - 1>(batch));
  m.train();
  return r;
}

void marker_task(const std::string& pooling) {
  auto m = make_classifier(classifier_config(pooling), 2);
  auto r = train_classifier(*m, kSanitized ? 12 : 300, marker_batch,
                            [&](const auto& b) { return m->forward(std::get<0>(b)); });
  MESSAGE(pooling, " pooling: loss ", r.first_loss, " -> ", r.last_loss, ", held-out accuracy ", r.test_accuracy);
  if (kSanitized)
    CHECK(r.last_loss < r.first_loss);
  else
    CHECK(r.test_accuracy >= 0.9);  // chance is 0.5
}

}  // namespace

TEST_CASE("encoder_classifier: mean pooling tells whether the marker blocks at both ends agree (>= 90%, chance 50%)") {
  marker_task("mean");
}

TEST_CASE("encoder_classifier: cls pooling tells whether the marker blocks at both ends agree (>= 90%, chance 50%)") {
  marker_task("cls");
}

TEST_CASE("encoder_classifier: the dual form learns whether two documents carry the same marker (>= 90%, chance 50%)") {
  auto c = classifier_config("mean");
  c.edit_options<models::EncoderClassifierOptions>([](auto& o) { o.dual = true; });
  auto m = make_classifier(c, 3);
  auto r = train_classifier(*m, kSanitized ? 12 : 300, pair_batch,
                            [&](const auto& b) { return m->forward(std::get<0>(b), std::get<1>(b)); });
  MESSAGE("dual: loss ", r.first_loss, " -> ", r.last_loss, ", held-out accuracy ", r.test_accuracy);
  if (kSanitized)
    CHECK(r.last_loss < r.first_loss);
  else
    CHECK(r.test_accuracy >= 0.9);  // chance is 0.5
}

TEST_CASE("encoder_classifier: the dual head is [u, v, |u - v|, u * v] -> Linear(4d, 2d) -> GELU -> Linear(2d, C)") {
  auto c = classifier_config("cls");
  c.edit_options<models::EncoderClassifierOptions>([](auto& o) { o.dual = true; });
  auto m = make_classifier(c, 4);
  m->eval();
  NoGradGuard g;
  std::mt19937_64 rng(1);
  auto [a, b, y] = pair_batch(3, rng);
  Tensor u = m->encode(a), v = m->encode(b);
  Tensor f = cat({u, v, abs(sub(u, v)), mul(u, v)}, 1);
  Tensor expected = linear(gelu(linear(f, m->hidden->weight, m->hidden->bias)), m->head->weight, m->head->bias);
  check_close(m->forward(a, b), expected, 1e-6, 1e-6);
  CHECK(m->forward(a, b).sizes() == Shape{3, 2});
}

TEST_CASE("encoder_classifier: padding does not change the result, for both poolings") {
  for (const char* pooling : {"mean", "cls"}) {
    CAPTURE(pooling);
    auto m = make_classifier(classifier_config(pooling), 6);
    m->eval();
    NoGradGuard g;
    Tensor x = from_vector(std::vector<int64_t>{5, 1, 7, 9, 2, 3, 3, 4, 8, 2}, {2, 5});
    Tensor padded = from_vector(std::vector<int64_t>{5, 1, 7, 9, 2, 0, 0, 0, 3, 3, 4, 8, 2, 0, 0, 0}, {2, 8});
    check_close(m->forward(padded), m->forward(x), 1e-5, 1e-5);
    // Without pad_id the same zeros are ordinary tokens and do change the result.
    auto c = classifier_config(pooling);
    c.pad_id = -1;
    auto plain = make_classifier(c, 6);
    plain->eval();
    Tensor diff = sub(plain->forward(padded), plain->forward(x));
    CHECK(amax(abs(diff)).item() > 1e-4);
  }
}

TEST_CASE("encoder_classifier: post-LN (no final norm) passes gradients to every part") {
  auto c = classifier_config("cls");
  c.pre_norm = false;
  auto m = make_classifier(c, 7);
  CHECK(m->ln_f == nullptr);
  std::mt19937_64 rng(3);
  auto [x, y] = marker_batch(8, rng);
  backward(cross_entropy(m->forward(x), y));
  CHECK(m->cls.grad().defined());
  CHECK(amax(abs(m->tok->weight.grad())).item() > 0);
  CHECK(amax(abs(select(m->tok->weight.grad(), 0, 0))).item() == 0);  // the pad row gets none
}

TEST_CASE("encoder_classifier: cost by hand for a tiny config") {
  // V = 10, d = 4, h = 2 (p = 2), d_ff = 8, one layer, max_len 6, C = 3, learned positions, seq_len 5.
  auto parse = [](const char* extra) {
    return models::parse_model_config(
        json::parse(std::string(R"({"model": "encoder_classifier", "vocab_size": 10, "num_classes": 3, "d_model": 4,
        "d_ff": 8, "layers": 1, "max_len": 6, "attention": {"heads": 2})") +
                    extra + "}"));
  };
  auto m = models::build_model(parse(""));
  models::ModelCost k = m->cost(5);
  // embeddings 10·4 + 6·4 = 64; attention 4·(4·4 + 4) = 80; feed-forward 4·8 + 8 + 8·4 + 4 = 76;
  // ln1, ln2 16; ln_f 8; head 4·3 + 3 = 15.
  CHECK(k.embedding_params == 64);
  CHECK(k.params == 64 + 80 + 76 + 16 + 8 + 15);
  CHECK(k.params == m->num_parameters());
  // Per position: projections 2·4·16 = 128, QKᵀ and AV over 5 keys 2·2·5·4 = 80, feed-forward 128;
  // 5 positions plus the head 2·4·3 = 24 once, over 5 tokens.
  CHECK(k.flops_per_token == doctest::Approx((5 * (128 + 80 + 128) + 24) / 5.0));

  auto cls = models::build_model(parse(R"(, "pooling": "cls")"));
  k = cls->cost(5);
  CHECK(k.embedding_params == 68);  // + the [CLS] vector
  CHECK(k.params == 263);
  CHECK(k.params == cls->num_parameters());
  // 6 positions over 6 keys: 2·2·6·4 = 96.
  CHECK(k.flops_per_token == doctest::Approx((6 * (128 + 96 + 128) + 24) / 5.0));

  auto dual = models::build_model(parse(R"(, "dual": true, "pre_norm": false)"));
  k = dual->cost(5);
  // hidden 16·8 + 8 = 136 and head 8·3 + 3 = 27 replace the single head; no ln_f.
  CHECK(k.params == 64 + 80 + 76 + 16 + 136 + 27);
  CHECK(k.params == dual->num_parameters());
  // Two sequences of 5 and the head 2·(16·8 + 8·3) = 304 once per pair, over 10 tokens.
  CHECK(k.flops_per_token == doctest::Approx((2 * 5 * (128 + 80 + 128) + 304) / 10.0));
  CHECK_THROWS_WITH_AS(cls->cost(6), "encoder_classifier: cost: seq_len 6 needs 7 positions; max_len is 6", Error);

  auto mlp = models::build_model(parse(R"(, "head": "mlp")"));
  k = mlp->cost(5);
  // hidden 4·8 + 8 = 40 and head 8·3 + 3 = 27 replace the single head.
  CHECK(k.params == 64 + 80 + 76 + 16 + 8 + 40 + 27);
  CHECK(k.params == mlp->num_parameters());
  // The head 2·(4·8 + 8·3) = 112 once, over 5 tokens.
  CHECK(k.flops_per_token == doctest::Approx((5 * (128 + 80 + 128) + 112) / 5.0));
  CHECK(k.kv_cache_bytes == 0);  // a classifier does not decode
}

TEST_CASE("encoder_classifier: the LRA code's head and table init (head mlp, embedding_std)") {
  auto parse = [](const char* extra) {
    return models::parse_model_config(
        json::parse(std::string(R"({"model": "encoder_classifier", "vocab_size": 50, "num_classes": 3, "d_model": 64,
        "d_ff": 32, "layers": 1, "max_len": 400, "pad_id": 0, "dropout": 0)") +
                    extra + "}"));
  };
  auto std_of = [](const Tensor& t) { return std::sqrt(mean(mul(t, t)).item()); };
  manual_seed(5);
  auto plain = std::dynamic_pointer_cast<models::EncoderClassifier>(models::build_model(parse("")));
  CHECK(std_of(plain->tok->weight) == doctest::Approx(1.0).epsilon(0.05));
  CHECK(plain->hidden == nullptr);
  manual_seed(5);
  auto lra = std::dynamic_pointer_cast<models::EncoderClassifier>(
      models::build_model(parse(R"(, "embedding_std": 0.02, "head": "mlp")")));
  CHECK(std_of(lra->tok->weight) == doctest::Approx(0.02 * std::sqrt(49.0 / 50.0)).epsilon(0.05));  // pad row 0
  CHECK(amax(abs(select(lra->tok->weight, 0, 0))).item() == 0);
  Tensor pos;
  for (const auto& [name, t] : lra->named_parameters())
    if (name == "pos.weight") pos = t;
  REQUIRE(pos.defined());
  CHECK(std_of(pos) == doctest::Approx(0.02).epsilon(0.05));
  REQUIRE(lra->hidden != nullptr);
  CHECK(lra->hidden->weight.sizes() == Shape{32, 64});  // Linear(d, d_ff), then ReLU
  CHECK(lra->head->weight.sizes() == Shape{3, 32});
  // The head is relu(hidden(pooled)) -> head: checked against the layers called by hand.
  Tensor x = from_vector(std::vector<int64_t>{3, 4, 5, 0, 7, 8, 9, 10}, {2, 4});
  lra->eval();
  Tensor want = lra->head->forward(relu(lra->hidden->forward(lra->encode(x))));
  CHECK(amax(abs(sub(lra->forward(x), want))).item() == 0);

  CHECK_THROWS_WITH_AS(parse(R"(, "head": "deep")"), "config: head: expected linear or mlp, got 'deep'", Error);
  CHECK_THROWS_WITH_AS(parse(R"(, "embedding_std": -1)"), "config: embedding_std: must be in [0, 10], got -1", Error);
  CHECK_THROWS_WITH_AS(models::parse_model_config(json::parse(R"({"model": "encoder_classifier", "vocab_size": 5,
      "num_classes": 2, "dual": true, "head": "mlp"})")),
                       "config: head: mlp is for a single document; a dual model has its own two-layer head", Error);
}

TEST_CASE("encoder_classifier: config -> build_model round trip") {
  json j = json::parse(R"({"model": "encoder_classifier", "vocab_size": 30, "num_classes": 4, "d_model": 16,
      "layers": 2, "max_len": 20, "pad_id": 0, "pooling": "cls", "dual": true, "pre_norm": false,
      "activation": "relu", "dropout": 0, "attention": {"heads": 4}})");
  auto c = models::parse_model_config(j);
  auto a = models::build_model(c);
  REQUIRE(std::dynamic_pointer_cast<models::EncoderClassifier>(a) != nullptr);
  CHECK(a->config.to_json() == c.to_json());
  manual_seed(5);
  auto b = models::build_model(models::parse_model_config(a->config.to_json()));
  auto pa = a->named_parameters(), pb = b->named_parameters();
  REQUIRE(pa.size() == pb.size());
  for (size_t i = 0; i < pa.size(); ++i) {
    CHECK(pa[i].first == pb[i].first);
    CHECK(pa[i].second.sizes() == pb[i].second.sizes());
  }
  b->load_state_dict(a->state_dict());
  a->eval();
  b->eval();
  Tensor x = from_vector(std::vector<int64_t>{1, 5, 9, 29, 0}, {1, 5});
  Tensor y = from_vector(std::vector<int64_t>{3, 3, 0}, {1, 3});
  auto ea = std::dynamic_pointer_cast<models::EncoderClassifier>(a);
  auto eb = std::dynamic_pointer_cast<models::EncoderClassifier>(b);
  check_close(ea->forward(x, y), eb->forward(x, y), 0, 0);
}

TEST_CASE("encoder_classifier: errors name the problem") {
  auto m = make_classifier(classifier_config("cls"));
  auto ids = [](std::vector<int64_t> v, Shape s) { return from_vector(v, s); };
  CHECK_THROWS_WITH_AS(m->forward(ids({1, 16}, {1, 2})), "encoder_classifier: token id 16 is outside [0, 16)", Error);
  CHECK_THROWS_WITH_AS(m->forward(tensor({1, 2}, {1, 2})),
                       "encoder_classifier: tokens must be int64 (B, T), got float32 [1, 2]", Error);
  CHECK_THROWS_WITH_AS(m->forward(ids(std::vector<int64_t>(65, 3), {1, 65})),
                       "encoder_classifier: 65 tokens after 1 position exceed max_len 65", Error);
  CHECK(m->forward(ids(std::vector<int64_t>(64, 3), {1, 64})).sizes() == Shape{1, 2});
  CHECK_THROWS_WITH_AS(m->forward(ids({1}, {1, 1}), ids({1}, {1, 1})),
                       "encoder_classifier: forward(a, b) needs a dual model (config.dual)", Error);
  auto c = classifier_config("mean");
  c.edit_options<models::EncoderClassifierOptions>([](auto& o) { o.dual = true; });
  auto d = make_classifier(c);
  CHECK_THROWS_WITH_AS(d->forward(ids({1}, {1, 1})),
                       "encoder_classifier: this model is dual (config.dual); call forward(a, b)", Error);
  CHECK_THROWS_WITH_AS(d->forward(ids({1}, {1, 1}), ids({1, 2}, {2, 1})),
                       "encoder_classifier: the two documents must be batches (B, T) of one size B, got int64 [1, 1] "
                       "and int64 [2, 1]",
                       Error);
  c.edit_options<models::EncoderClassifierOptions>([](auto& o) { o.pooling = "max"; });
  CHECK_THROWS_WITH_AS(models::EncoderClassifier{c}, "encoder_classifier: pooling must be mean or cls, got 'max'",
                       Error);
}
