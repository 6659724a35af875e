// tests/models/test_config.cpp — model configs: defaults, and a message naming
// the key for every kind of bad input.
#include "support/testing.h"

#include "models/config.h"
#include "nn/attention/mgk_attention.h"

using namespace ks;
using json = nlohmann::json;

TEST_CASE("defaults are filled in and the resolved config is explicit") {
  auto m = models::parse_model_config(json::parse(R"({"vocab_size": 100})"));
  CHECK(m.model == "decoder_lm");
  CHECK(m.resolved_d_ff() == 1024);
  CHECK(m.attention.type == "softmax");
  CHECK(m.attention.d_model == 256);
  json r = m.to_json();
  CHECK(r["attention"]["head_dim"] == 32);
  CHECK(models::parse_model_config(r).to_json() == r);  // round trip
  auto s =
      models::parse_model_config(json::parse(R"({"model": "seq2seq", "src_vocab_size": 11, "tgt_vocab_size": 11})"));
  CHECK_FALSE(s.pre_norm);
  CHECK(s.positions == "sinusoidal");
  auto f = models::parse_model_config(json::parse(
      R"({"vocab_size": 10, "max_len": 64, "attention": {"type": "fixed", "heads": 3, "head_dim": "seq"}})"));
  CHECK(f.attention.head_dim == 64);
}

TEST_CASE("a megabyte value of the wrong type gives a short message") {
  json j = {{"vocab_size", std::string(1 << 20, 'x')}};
  CHECK_THROWS_WITH_AS(models::parse_model_config(j),
                       ("config: vocab_size: expected an integer, got \"" + std::string(79, 'x') + "...").c_str(),
                       Error);
  json a = {{"vocab_size", 10}, {"attention", json::array({std::string(1 << 20, 'y')})}};
  CHECK_THROWS_WITH_AS(models::parse_model_config(a),
                       ("config: attention: expected an object, got [\"" + std::string(78, 'y') + "...").c_str(),
                       Error);
}

TEST_CASE("bad configs name the key") {
  auto bad = [](const char* text) { return models::parse_model_config(json::parse(text)); };
  CHECK_THROWS_WITH_AS(bad(R"({"vocab_size": 10, "layerz": 3})"),
                       "config: layerz: unknown key for model 'decoder_lm' (did you mean layers?)", Error);
  CHECK_THROWS_WITH_AS(bad(R"({"vocab_size": 10, "num_classes": 3})"),
                       "config: num_classes: unknown key for model 'decoder_lm'", Error);
  CHECK_THROWS_WITH_AS(bad(R"({"vocab_size": "big"})"), "config: vocab_size: expected an integer, got \"big\"", Error);
  CHECK_THROWS_WITH_AS(bad(R"({"vocab_size": 10.5})"), "config: vocab_size: expected an integer, got 10.5", Error);
  CHECK_THROWS_WITH_AS(bad(R"({"vocab_size": 1e30})"), "config: vocab_size: expected an integer, got 1e+30", Error);
  // heads * head_dim and 4 * d_model overflowed int64 (undefined behaviour) for sizes near 2^62.
  CHECK_THROWS_WITH_AS(bad(R"({"vocab_size": 10, "d_model": 4611686018427387904})"),
                       "config: d_model: 4611686018427387904 is out of range (sizes and ids fit in 32 bits)", Error);
  CHECK_THROWS_WITH_AS(bad(R"({"vocab_size": 10, "attention": {"heads": -4294967296}})"),
                       "config: attention.heads: -4294967296 is out of range (sizes and ids fit in 32 bits)", Error);
  CHECK_THROWS_WITH_AS(bad(R"({"vocab_size": 10, "model": 5})"), "config: model: expected a string, got 5", Error);
  CHECK_THROWS_WITH_AS(bad(R"({"vocab_size": 10, "pre_norm": 1})"), "config: pre_norm: expected true or false, got 1",
                       Error);
  CHECK_THROWS_WITH_AS(bad(R"({"d_model": 8})"), "config: vocab_size: must be positive, got 0", Error);
  CHECK_THROWS_WITH_AS(bad(R"({"vocab_size": 10, "dropout": 1.5})"), "config: dropout: must be in [0, 1), got 1.5",
                       Error);
  CHECK_THROWS_WITH_AS(bad(R"({"vocab_size": 10, "attention": {"type": "sparse"}})"),
                       doctest::Contains("config: attention.type: unknown family 'sparse'"), Error);
  CHECK_THROWS_WITH_AS(bad(R"({"vocab_size": 10, "attention": {"heads": 3}})"),
                       doctest::Contains("attention.heads: 3 heads do not divide d_model 256"), Error);
  CHECK_THROWS_WITH_AS(bad(R"({"vocab_size": 10, "attention": {"kees": 3}})"),
                       "config: attention.kees: unknown key (did you mean attention.keys?)", Error);
  CHECK_THROWS_WITH_AS(bad(R"({"model": "gpt", "vocab_size": 10})"),
                       doctest::Contains("config: model: unknown model 'gpt'"), Error);
  CHECK_THROWS_WITH_AS(bad(R"({"model": "encoder_classifier", "vocab_size": 10, "num_classes": 2, "pooling": "max"})"),
                       "config: pooling: expected mean or cls, got 'max'", Error);
  CHECK_THROWS_WITH_AS(
      bad(R"({"model": "seq2seq", "src_vocab_size": 11, "tgt_vocab_size": 12, "share_embeddings": true})"),
      doctest::Contains("config: share_embeddings"), Error);
  CHECK_THROWS_WITH_AS(bad(R"([1, 2])"), doctest::Contains("config: expected a JSON object"), Error);
}

TEST_CASE("the MGK fidelity keys parse, round-trip, and name the key when bad") {
  auto parse = [](const char* text) { return models::parse_model_config(json::parse(text)); };
  auto m = parse(R"({"vocab_size": 10, "attention": {"type": "smgk", "heads": 2, "sigma2_keys": [5.6, 1.9],
                     "shift_init": "official"}})");
  CHECK(m.attention.options_as<nn::SmgkOptions>().sigma2_keys == std::vector<double>{5.6, 1.9});
  CHECK(m.attention.options_as<nn::SmgkOptions>().shift_init == "official");
  CHECK(parse(m.to_json().dump().c_str()).to_json() == m.to_json());
  auto s = parse(R"({"vocab_size": 10, "attention": {"type": "mgk", "soft_e": true, "pi_momentum": 1}})");
  CHECK(s.attention.options_as<nn::MgkOptions>().pi_momentum == 1);
  CHECK_FALSE(parse(R"({"vocab_size": 10, "attention": {"type": "mgk", "hard_e": true, "learn_pi": false}})")
                  .attention.options_as<nn::MgkOptions>()
                  .learn_pi);
  // Each attention section refused, by exactly this message.
  const std::pair<std::string, std::string> refused[] = {
      {R"({"type": "mgk", "sigma2_keys": 3})", "config: attention.sigma2_keys: expected an array of numbers, got 3"},
      {R"({"type": "mgk", "sigma2_keys": ["a", 1]})", "config: attention.sigma2_keys: expected numbers, got \"a\""},
      {R"({"type": "mgk", "sigma2_keys": [1, 2, 3]})",
       "config: attention.sigma2_keys: 3 values for 2 keys; give one per key"},
      {R"({"type": "mgk", "sigma2_keys": [1, -2]})",
       "config: attention.sigma2_keys: every value must be positive, got -2"},
      {R"({"type": "softmax", "sigma2_keys": [1]})",
       "config: attention.sigma2_keys applies to mgk and smgk only, not 'softmax'"},
      {R"({"type": "mgk", "soft_e": true, "learn_pi": false})",
       "config: attention: learn_pi false and soft_e cannot both be set (soft-E estimates π)"},
      {R"({"type": "linear", "learn_pi": false})",
       "config: attention.learn_pi applies to mgk and smgk only, not 'linear'"},
      // Another family's key: at its default it is what a resolved config lists; else refused, naming its families.
      {R"({"type": "mgk", "shift_init": "official"})", "config: attention.shift_init applies to smgk only, not 'mgk'"},
      {R"({"type": "softmax", "hard_e": true})",
       "config: attention.hard_e applies to mgk and smgk only, not 'softmax'"},
      {R"({"type": "linear", "keys": 3})", "config: attention.keys applies to mgk, mlk and smgk only, not 'linear'"},
      {R"({"type": "smgk", "shift_init": "zeros"})",
       "config: attention.shift_init: expected \"small\" or \"official\", got 'zeros'"},
  };
  for (const auto& r : refused) {
    CAPTURE(r.first);
    CHECK_THROWS_WITH_AS(parse(("{\"vocab_size\": 10, \"attention\": " + r.first + "}").c_str()), r.second.c_str(),
                         Error);
  }
  CHECK_THROWS_WITH_AS(parse(R"({"vocab_size": 10, "attention": {"type": "mgk", "learn_pi": "no"}})"),
                       doctest::Contains("attention.learn_pi"), Error);
  const auto soft = parse(R"({"vocab_size": 10, "attention": {"type": "softmax", "keys": 2, "hard_e": false,
                             "shift_init": "small", "sigma2_keys": []}})");
  CHECK(soft.to_json()["attention"]["keys"] == 2);  // every family's keys, at their defaults
  CHECK(soft.to_json()["attention"]["shift_init"] == "small");
}

TEST_CASE("a model section's errors carry its prefix, and a near-miss key gets a suggestion") {
  auto in_run = [](const char* text) { return models::parse_model_config(json::parse(text), "model."); };
  CHECK_THROWS_WITH_AS(in_run(R"({"vocab_size": 10, "d_modle": 16})"),
                       "config: model.d_modle: unknown key for model 'decoder_lm' (did you mean model.d_model?)",
                       Error);
  CHECK_THROWS_WITH_AS(in_run(R"({"vocab_size": 10, "attention": {"haeds": 2}})"),
                       "config: model.attention.haeds: unknown key (did you mean model.attention.heads?)", Error);
  CHECK_THROWS_WITH_AS(in_run(R"({"vocab_size": 10, "attention": {"heads": 3}})"),
                       doctest::Contains("config: model.attention.heads: 3 heads do not divide d_model 256"), Error);
  CHECK_THROWS_WITH_AS(in_run(R"({"vocab_size": 0})"), "config: model.vocab_size: must be positive, got 0", Error);
  CHECK_THROWS_WITH_AS(in_run(R"({"model": "seq2sec"})"),
                       doctest::Contains("config: model.model: unknown model 'seq2sec' (expected decoder_lm, "
                                         "encoder_classifier or seq2seq; did you mean seq2seq?)"),
                       Error);
  CHECK_THROWS_WITH_AS(in_run(R"([1])"), doctest::Contains("config: model: expected a JSON object"), Error);
  CHECK(nearest_key("stpes", {"steps", "seed"}) == "steps");  // a swap is one edit
  CHECK(nearest_key("lr", {"eps", "type"}).empty());          // short keys: one edit at most
  CHECK(nearest_key("warmup", {"warmup_steps"}).empty());     // too far to guess
  CHECK(nearest_key("x", {}).empty());
  // The key table covers what each family accepts, attention keys included.
  for (const char* family : {"decoder_lm", "encoder_classifier", "seq2seq"}) {
    std::vector<std::string> keys;
    for (const KeyDoc& k : models::model_keys(family)) {
      CHECK_FALSE(k.doc.empty());
      keys.push_back(k.key);
    }
    CHECK(std::find(keys.begin(), keys.end(), "attention.heads") != keys.end());
  }
  CHECK_THROWS_WITH_AS(models::model_keys("gpt"), doctest::Contains("unknown model 'gpt'"), Error);
}

TEST_CASE("attention.kv_heads and ALiBi parse, round-trip, and name the key when bad") {
  auto parse = [](const char* text) { return models::parse_model_config(json::parse(text)); };
  auto g = parse(R"({"vocab_size": 10, "attention": {"heads": 8, "kv_heads": 2}})");
  CHECK(g.attention.kv_heads == 2);
  CHECK(g.attention.resolved_kv_heads() == 2);
  CHECK(g.to_json()["attention"]["kv_heads"] == 2);
  CHECK(parse(g.to_json().dump().c_str()).to_json() == g.to_json());
  CHECK(parse(R"({"vocab_size": 10})").attention.resolved_kv_heads() == 8);           // 0 means heads
  auto m = parse(R"({"vocab_size": 10, "attention": {"heads": 8, "kv_heads": 1}})");  // multi-query
  CHECK(m.attention.resolved_kv_heads() == 1);
  auto a = parse(R"({"vocab_size": 10, "attention": {"alibi": true}})");
  CHECK(a.attention.alibi);
  CHECK(a.to_json()["attention"]["alibi"] == true);
  CHECK(parse(a.to_json().dump().c_str()).to_json() == a.to_json());
  CHECK(parse(R"({"vocab_size": 10, "attention": {"type": "fixed", "heads": 4, "head_dim": 64, "alibi": true}})")
            .attention.alibi);

  auto bad = [&](const char* text) { return parse(text); };
  CHECK_THROWS_WITH_AS(bad(R"({"vocab_size": 10, "attention": {"heads": 8, "kv_heads": 3}})"),
                       doctest::Contains("attention.kv_heads: 3 key/value heads do not divide 8 heads"), Error);
  CHECK_THROWS_WITH_AS(bad(R"({"vocab_size": 10, "attention": {"kv_heads": -1}})"),
                       doctest::Contains("attention.kv_heads"), Error);
  CHECK_THROWS_WITH_AS(bad(R"({"vocab_size": 10, "attention": {"kv_heads": "two"}})"),
                       doctest::Contains("config: attention.kv_heads: expected an integer"), Error);
  CHECK_THROWS_WITH_AS(
      bad(R"({"vocab_size": 10, "attention": {"type": "mgk", "heads": 4, "kv_heads": 2}})"),
      doctest::Contains("attention.kv_heads: the \"mgk\" family has one key/value head per query head"), Error);
  CHECK_THROWS_WITH_AS(bad(R"({"vocab_size": 10, "attention": {"type": "linear", "alibi": true}})"),
                       doctest::Contains("attention.alibi: the \"linear\" family does not take ALiBi"), Error);
  CHECK_THROWS_WITH_AS(bad(R"({"vocab_size": 10, "attention": {"alibi": 1}})"),
                       doctest::Contains("config: attention.alibi: expected true or false"), Error);
}
