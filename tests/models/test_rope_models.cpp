// tests/models/test_rope_models.cpp — positions "rope" in every model kind:
// the config keys (positions, rope_theta: default, range, refused for another
// kind, absent from the resolved config of the kinds with a table), no
// position table and so max_len·d fewer parameters, decoder-LM logits with
// caches equal to full recomputation at several offsets, every attention
// family trains a few steps with rope or names its error, seq2seq and the
// encoder classifier with rope in their self-attentions only.
#include "support/testing.h"
#include "support/tiny_models.h"

#include <algorithm>

#include "models/decoder_lm.h"
#include "models/encoder_classifier.h"
#include "models/seq2seq.h"
#include "nn/optim.h"

using namespace ks;
using namespace ks::testing;
using json = nlohmann::json;

namespace {

json lm_json(const std::string& family, json extra = json::object()) {
  json j = {{"model", "decoder_lm"},
            {"vocab_size", 16},
            {"d_model", 16},
            {"d_ff", 32},
            {"layers", 2},
            {"max_len", 32},
            {"dropout", 0},
            {"positions", "rope"},
            {"attention", {{"type", family}, {"heads", 2}}}};
  if (family == "fixed") j["attention"]["head_dim"] = 4;
  j.update(extra);
  return j;
}

// A few Adam steps on one fixed batch; the losses before and after.
std::pair<double, double> train_steps(models::Model& m, const models::Batch& batch, int steps) {
  nn::Adam opt(m.parameters(), {.lr = 1e-2});
  const double before = m.loss(batch).item();
  for (int s = 0; s < steps; ++s) {
    backward(m.loss(batch));
    opt.step();
    opt.zero_grad();
  }
  return {before, m.loss(batch).item()};
}

Tensor random_tokens(int64_t B, int64_t T, int64_t lo, int64_t hi, uint64_t seed) {
  Generator g(seed);
  return randint(lo, hi, {B, T}, {.dtype = kInt64}, &g);
}

}  // namespace

TEST_CASE("rope config: rope_theta defaults to 10000, is checked, belongs to rope, and stays out of other configs") {
  models::ModelConfig c = models::parse_model_config(lm_json("softmax"));
  CHECK(c.positions == "rope");
  CHECK(c.to_json().at("rope_theta") == 10000.0);
  CHECK(models::parse_model_config(c.to_json()).to_json() == c.to_json());  // round trip
  CHECK(models::parse_model_config(lm_json("softmax", {{"rope_theta", 500}})).to_json().at("rope_theta") == 500.0);
  CHECK(models::layer_config(models::parse_model_config(lm_json("softmax", {{"rope_theta", 500}})))
            .attention.rope_theta == 500);
  CHECK_THROWS_WITH_AS(models::parse_model_config(lm_json("softmax", {{"rope_theta", 0}})),
                       "config: rope_theta: must be > 0, got 0", Error);
  CHECK_THROWS_WITH_AS(models::parse_model_config(lm_json("softmax", {{"rope_theta", "big"}})),
                       "config: rope_theta: expected a number, got \"big\"", Error);
  CHECK_THROWS_WITH_AS(models::parse_model_config(lm_json("softmax", {{"positions", "learned"}, {"rope_theta", 500}})),
                       "config: rope_theta applies to positions rope only, not 'learned'", Error);
  CHECK_THROWS_WITH_AS(models::parse_model_config(lm_json("softmax", {{"positions", "xpos"}})),
                       "config: positions: expected alibi, learned, rope or sinusoidal, got 'xpos'", Error);
  // A family that cannot take rope is refused when the config is read, by name.
  CHECK_THROWS_WITH_AS(models::parse_model_config(lm_json("linear")),
                       doctest::Contains("config: attention.rope_theta: the \"linear\" family does not take rotary"),
                       Error);
  // Kinds with a table write no rope key: their resolved configs keep exactly their keys.
  for (const char* kind : {"learned", "sinusoidal"}) {
    const json j = models::parse_model_config(lm_json("softmax", {{"positions", kind}})).to_json();
    CHECK_FALSE(j.contains("rope_theta"));
  }
  // A config built in code with only the kind's name gets the kind's defaults.
  models::ModelConfig coded = tiny_model_config("decoder_lm", 16, 16, 1, 32, 2);
  coded.positions = "rope";
  CHECK(models::layer_config(coded).attention.rope_theta == 10000);
  // positions changed after parsing: the new kind's defaults, not the parsed kind's options.
  models::ModelConfig changed = models::parse_model_config(lm_json("softmax", {{"rope_theta", 500}}));
  changed.positions = "learned";
  CHECK(models::layer_config(changed).attention.rope_theta == 0);
  const auto named = models::build_model(changed)->named_parameters();
  CHECK(std::count_if(named.begin(), named.end(), [](const auto& n) { return n.first == "pos.weight"; }) == 1);
}

TEST_CASE("rope decoder_lm: no position table (max_len * d fewer parameters), cost agrees") {
  auto rope = models::build_model(models::parse_model_config(lm_json("softmax")));
  auto learned = models::build_model(models::parse_model_config(lm_json("softmax", {{"positions", "learned"}})));
  CHECK(learned->num_parameters() - rope->num_parameters() == 32 * 16);
  CHECK(rope->cost(32).params == rope->num_parameters());
  CHECK(rope->cost(32).embedding_params == 16 * 16);
  for (auto& [name, _] : rope->named_parameters()) CHECK(name.rfind("pos.", 0) != 0);
}

TEST_CASE("rope decoder_lm: logits with caches equal full recomputation at several offsets, every family taking it") {
  // Each family with rope; the families with grouped-query attention also
  // with rope and one key/value head for its two query heads (multi-query).
  struct Case {
    std::string family;
    int64_t kv_heads;
  };
  const Case cases[] = {{"softmax", 0}, {"fixed", 0}, {"mgk", 0}, {"smgk", 0}, {"softmax", 1}, {"fixed", 1}};
  for (const Case& c : cases) {
    const std::string& family = c.family;  // not a structured binding: CAPTURE's lambda (clang 14)
    const int64_t kv_heads = c.kv_heads;
    CAPTURE(family);
    CAPTURE(kv_heads);
    manual_seed(3);
    json j = lm_json(family);
    j["attention"]["kv_heads"] = kv_heads;
    auto m = std::dynamic_pointer_cast<models::DecoderLM>(models::build_model(models::parse_model_config(j)));
    REQUIRE(m);
    m->to(kFloat64);
    m->eval();
    NoGradGuard no_grad;
    Tensor tokens = random_tokens(2, 12, 0, 16, 4);
    Tensor full = m->forward(tokens);
    for (int64_t prefill : {1, 4, 7}) {
      CAPTURE(prefill);
      std::vector<nn::DecoderLayerCache> caches;
      std::vector<Tensor> parts{m->forward(narrow(tokens, 1, 0, prefill), &caches)};
      for (int64_t t = prefill; t < 12; ++t) parts.push_back(m->forward(narrow(tokens, 1, t, 1), &caches));
      check_close(cat(parts, 1), full, 1e-11, 1e-9);
    }
  }
}

TEST_CASE("rope: every attention family trains a few steps with it (loss falls) or names why it cannot") {
  for (const std::string& family : nn::attention_families()) {
    CAPTURE(family);
    const json j = lm_json(family);
    if (family == "linear" || family == "mlk") {
      CHECK_THROWS_WITH_AS(models::parse_model_config(j), doctest::Contains("family does not take rotary"), Error);
      continue;
    }
    manual_seed(5);
    auto m = models::build_model(models::parse_model_config(j));
    models::Batch batch;
    batch.tokens = random_tokens(4, 12, 0, 16, 6);
    batch.targets = random_tokens(4, 12, 0, 16, 7);
    auto [before, after] = train_steps(*m, batch, 5);
    MESSAGE(family, ": loss ", before, " -> ", after);
    CHECK(after < before);
  }
}

TEST_CASE("rope seq2seq and encoder classifier: rope in self-attention only, no tables, they train") {
  json s = {{"model", "seq2seq"}, {"src_vocab_size", 12}, {"tgt_vocab_size", 12}, {"d_model", 16},
            {"d_ff", 32},         {"encoder_layers", 1},  {"decoder_layers", 1},  {"max_len", 16},
            {"dropout", 0},       {"positions", "rope"},  {"rope_theta", 1000},   {"attention", {{"heads", 2}}}};
  manual_seed(8);
  auto m = std::dynamic_pointer_cast<models::Seq2Seq>(models::build_model(models::parse_model_config(s)));
  REQUIRE(m);
  CHECK(m->src_pos == nullptr);
  CHECK(m->tgt_pos == nullptr);
  CHECK((*m->encoder)[0].attn->config.rope_theta == 1000);
  CHECK((*m->decoder)[0].self_attn->config.rope_theta == 1000);
  CHECK((*m->decoder)[0].cross_attn->config.rope_theta == 0);
  CHECK(m->cost(8).params == m->num_parameters());
  Tensor src = random_tokens(3, 6, 3, 12, 9), tgt = random_tokens(3, 5, 3, 12, 10);
  models::Batch batch;
  batch.tokens = src;
  batch.decoder_input = tgt;
  batch.targets = random_tokens(3, 5, 3, 12, 11);
  auto [before, after] = train_steps(*m, batch, 5);
  CHECK(after < before);
  // Greedy decoding runs on the caches with the rotated self-attention.
  CHECK(m->greedy_decode(narrow(src, 0, 0, 1), 6).size() == 1);

  json e = {{"model", "encoder_classifier"},
            {"vocab_size", 12},
            {"num_classes", 3},
            {"d_model", 16},
            {"d_ff", 32},
            {"layers", 1},
            {"max_len", 16},
            {"dropout", 0},
            {"positions", "rope"},
            {"attention", {{"heads", 2}}}};
  manual_seed(9);
  auto c = models::build_model(models::parse_model_config(e));
  CHECK(c->cost(8).params == c->num_parameters());
  models::Batch labelled;
  labelled.tokens = random_tokens(4, 6, 1, 12, 12);
  labelled.labels = reshape(random_tokens(1, 4, 0, 3, 13), {4});
  auto [b2, a2] = train_steps(*c, labelled, 5);
  CHECK(a2 < b2);
}

TEST_CASE("alibi positions: no table, ALiBi on every self-attention, refused by families without it") {
  models::ModelConfig c = models::parse_model_config(lm_json("softmax", {{"positions", "alibi"}}));
  CHECK(models::layer_config(c).attention.alibi);
  CHECK(models::parse_model_config(c.to_json()).to_json() == c.to_json());
  models::DecoderLM lm(c);
  for (auto& [name, _] : lm.named_parameters()) CHECK(name.rfind("pos", 0) != 0);
  CHECK_THROWS_WITH_AS(models::parse_model_config(lm_json("mgk", {{"positions", "alibi"}})),
                       doctest::Contains("attention.alibi: the \"mgk\" family does not take ALiBi"), Error);
}
