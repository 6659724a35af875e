// tests/models/test_model_kinds.cpp — the model-kind descriptors (models/kind.h):
// a kind registered with options of its own is parsed, checked, written back
// and built through parse_model_config with nothing shared naming it; the
// built-in kinds' descriptors carry their data task, defaults and stored
// defaults; a malformed descriptor is refused.
// Not here: the keys' messages for the built-in kinds (test_config.cpp), a
// kind from a plugin (tests/tools/test_plugins.sh).
#include "support/testing.h"

#include <algorithm>

#include "models/decoder_lm.h"
#include "models/kind.h"
#include "nn/user_input.h"

using namespace ks;
using json = nlohmann::json;

namespace {

// A kind's own options: one key, strictly checked. The DecoderLM the kind
// builds reads decoder_lm's options typed, so they derive from those (at
// their defaults: this kind does not take their keys).
struct WideOptions : models::DecoderLmOptions {
  int64_t widen = 2;
  static WideOptions parse(const json& section, const std::string& prefix) {
    WideOptions o;
    nn::read_json_key(section, "widen", o.widen, prefix);
    return o;
  }
  static std::vector<KeyDoc> option_keys() { return {{"widen", "a factor, >= 1"}}; }
  json to_json() const override { return {{"widen", widen}}; }
  void validate(const models::ModelConfig&, const std::string& prefix) const override {
    KS_CHECK(widen >= 1, "config: ", prefix, "widen: must be >= 1, got ", widen);
  }
};

std::shared_ptr<models::Model> make_lm(const models::ModelConfig& cfg) {
  return std::make_shared<models::DecoderLM>(cfg);
}

// Registered inside the test case that uses it (the file's last), so that the
// kinds the other cases list stay the built-in three.
void register_wide_lm() {
  models::register_model(models::with_model_options<WideOptions>(
      {.name = "test_wide_lm",
       .task = "language_model",
       .keys = {{"layers", "decoder layers"}, {"vocab_size", "token ids"}, {"pad_id", "the padding id"}},
       .defaults = [](models::ModelConfig& m) { m.d_model = 8; },
       .validate = [](const models::ModelConfig& m,
                      const std::string& p) { models::check_positive(m.vocab_size, p, "vocab_size"); },
       .make = make_lm}));
}

}  // namespace

TEST_CASE("model kinds: the built-in descriptors say what data they train on and what old runs meant") {
  CHECK(models::model_kinds() == std::vector<std::string>{"decoder_lm", "encoder_classifier", "seq2seq"});
  CHECK(models::default_model_for_task("language_model") == "decoder_lm");
  CHECK(models::default_model_for_task("classification") == "encoder_classifier");
  CHECK(models::default_model_for_task("seq2seq") == "seq2seq");
  CHECK(models::default_model_for_task("images").empty());
  CHECK(models::model_kind("decoder_lm").stored_defaults == json{{"tied_lookup_reversed", false}});
  CHECK(models::model_kind("seq2seq").stored_defaults == json{{"tied_lookup_reversed", false}});
  CHECK(models::model_kind("encoder_classifier").stored_defaults.empty());
  models::ModelConfig cls = models::parse_model_config(
      {{"model", "encoder_classifier"}, {"vocab_size", 10}, {"num_classes", 2}, {"pooling", "cls"}});
  CHECK(models::model_kind("encoder_classifier").extra_positions(cls) == 1);
  // seq2seq's defaults differ from the shared ones; written back explicitly.
  const json s =
      models::parse_model_config({{"model", "seq2seq"}, {"src_vocab_size", 9}, {"tgt_vocab_size", 9}}).to_json();
  CHECK(s["pre_norm"] == false);
  CHECK(s["positions"] == "sinusoidal");
  CHECK(s["pad_id"] == 0);
  CHECK_FALSE(s.contains("layers"));
}

TEST_CASE("model kinds: an unknown kind says a plugin's kind needs its plugin, and a malformed descriptor is refused") {
  CHECK_THROWS_WITH_AS(models::model_kind("tiny_lm", "model."),
                       "config: model.model: unknown model 'tiny_lm' (expected decoder_lm, encoder_classifier or "
                       "seq2seq); a plugin's model kind is known once the plugin is loaded: keystone train --plugin "
                       "FILE, or the config's \"plugins\" list",
                       Error);
  CHECK(models::find_model_kind("tiny_lm") == nullptr);
  CHECK_THROWS_WITH_AS(
      models::register_model(
          {.name = "test_bad", .task = "language_model", .keys = {{"widen", "not a field"}}, .make = make_lm}),
      doctest::Contains("lists key 'widen', which is no ModelConfig field"), Error);
  CHECK_THROWS_WITH_AS(models::register_model({.name = "test_bad", .make = make_lm}),
                       doctest::Contains("needs a name ('test_bad'), a task ('')"), Error);
  CHECK(models::find_model_kind("test_bad") == nullptr);
}

TEST_CASE("model kinds: a kind with options of its own is parsed, checked, written back and built") {
  register_wide_lm();
  const models::ModelConfig m = models::parse_model_config(
      {{"model", "test_wide_lm"}, {"vocab_size", 12}, {"layers", 1}, {"widen", 3}, {"attention", {{"heads", 2}}}});
  CHECK(m.options_as<WideOptions>().widen == 3);
  CHECK(m.d_model == 8);  // the kind's default
  const json j = m.to_json();
  CHECK(j["widen"] == 3);
  CHECK(j["vocab_size"] == 12);
  CHECK_FALSE(j.contains("num_classes"));  // only the keys the kind lists
  CHECK(models::parse_model_config(j).to_json() == j);
  CHECK(models::build_model(m)->cost(4).params > 0);
  // Without the key, the options' defaults, written explicitly.
  CHECK(models::parse_model_config({{"model", "test_wide_lm"}, {"vocab_size", 12}}).to_json()["widen"] == 2);

  CHECK_THROWS_WITH_AS(
      models::parse_model_config({{"model", "test_wide_lm"}, {"vocab_size", 12}, {"widn", 3}}, "model."),
      "config: model.widn: unknown key for model 'test_wide_lm' (did you mean model.widen?)", Error);
  CHECK_THROWS_WITH_AS(models::parse_model_config({{"model", "test_wide_lm"}, {"vocab_size", 12}, {"widen", 0}}),
                       "config: widen: must be >= 1, got 0", Error);
  CHECK_THROWS_WITH_AS(models::parse_model_config({{"model", "test_wide_lm"}, {"vocab_size", 0}}),
                       "config: vocab_size: must be positive, got 0", Error);
  CHECK_THROWS_WITH_AS(models::parse_model_config({{"model", "test_wide_lm"}, {"vocab_size", 12}, {"pooling", "cls"}}),
                       "config: pooling: unknown key for model 'test_wide_lm'", Error);
  // Its keys, options included, are the table `keystone config --defaults` documents.
  std::vector<std::string> keys;
  for (const KeyDoc& k : models::model_keys("test_wide_lm")) keys.push_back(k.key);
  CHECK(std::find(keys.begin(), keys.end(), "widen") != keys.end());
  CHECK(std::find(keys.begin(), keys.end(), "num_classes") == keys.end());
  // The "model" key's meaning lists every registered kind.
  CHECK(models::model_keys("decoder_lm")[0].doc.find("test_wide_lm") != std::string::npos);
}
