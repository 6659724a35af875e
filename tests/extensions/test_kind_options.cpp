// tests/extensions/test_kind_options.cpp — a built-in model kind owns its keys
// as a plugin kind does (issue 52): decoder_lm's, encoder_classifier's and
// seq2seq's own keys are fields of their typed options (models/decoder_lm.h
// DecoderLmOptions, ...), read with options_as<T>(), while the shared field
// table of models/config.cpp keeps only the fields several kinds take; and
// tools ask an attention module for its key mixture (nn::KeyMixture) and
// its record (nn::AttentionRecord), never its family's type. Not the keys'
// messages (tests/models/test_config.cpp) nor a plugin's kind
// (tests/models/test_model_kinds.cpp, tests/tools/test_plugins.sh).
#include "support/testing.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "models/decoder_lm.h"
#include "models/encoder_classifier.h"
#include "models/kind.h"
#include "models/seq2seq.h"
#include "nn/attention/attention.h"

using namespace ks;
using json = nlohmann::json;

TEST_CASE("kind options: a built-in kind's own keys are read typed, defaulted, and written back") {
  const models::ModelConfig lm =
      models::parse_model_config({{"vocab_size", 10}, {"tie_embeddings", true}, {"fused_loss", true}});
  const models::DecoderLmOptions& o = lm.options_as<models::DecoderLmOptions>();
  CHECK(o.tie_embeddings);
  CHECK(o.fused_loss);
  CHECK(o.tied_lookup_scaled);  // its default
  CHECK(lm.to_json()["tie_embeddings"] == true);

  const models::ModelConfig cls = models::parse_model_config(
      {{"model", "encoder_classifier"}, {"vocab_size", 10}, {"num_classes", 3}, {"pooling", "cls"}});
  CHECK(cls.options_as<models::EncoderClassifierOptions>().num_classes == 3);
  CHECK(cls.options_as<models::EncoderClassifierOptions>().pooling == "cls");

  const models::ModelConfig s2s =
      models::parse_model_config({{"model", "seq2seq"}, {"src_vocab_size", 9}, {"tgt_vocab_size", 9}, {"eos_id", 3}});
  CHECK(s2s.options_as<models::Seq2SeqOptions>().eos_id == 3);
  CHECK(s2s.options_as<models::Seq2SeqOptions>().bos_id == 1);  // its default
  CHECK(s2s.pad_id == 0);                                       // a shared field, the kind's default

  // A config built in code holds none: the kind's defaults; edit_options sets some.
  models::ModelConfig c;
  CHECK_FALSE(c.options_as<models::DecoderLmOptions>().tie_embeddings);
  c.edit_options<models::DecoderLmOptions>([](auto& x) { x.tie_embeddings = true; });
  CHECK(c.options_as<models::DecoderLmOptions>().tie_embeddings);
  // Another kind's options are a programming error, named.
  CHECK_THROWS_WITH_AS(c.options_as<models::Seq2SeqOptions>(), "model 'decoder_lm': its options are another kind's",
                       Error);
}

TEST_CASE("kind options: the shared field table has no kind's own field, and each shared field is shared") {
  std::map<std::string, int> takers;  // shared field -> built-in kinds taking it
  for (const char* name : {"decoder_lm", "encoder_classifier", "seq2seq"}) {
    CAPTURE(name);
    const models::ModelKind& kind = models::model_kind(name);
    REQUIRE(bool(kind.option_keys));  // each has typed options
    for (const KeyDoc& k : kind.option_keys()) {
      CAPTURE(k.key);
      CHECK_FALSE(models::is_model_field(k.key));
    }
    for (const KeyDoc& k : kind.keys) {
      CHECK(models::is_model_field(k.key));
      ++takers[k.key];
    }
  }
  for (const auto& taker : takers) {  // no structured binding: clang 14 will not capture one in CAPTURE
    CAPTURE(taker.first);
    CHECK(taker.second >= 2);
  }
  for (const char* own : {"tie_embeddings", "tied_lookup_scaled", "fused_loss", "num_classes", "pooling", "dual",
                          "head", "embedding_std", "src_vocab_size", "tgt_vocab_size", "encoder_layers",
                          "decoder_layers", "share_embeddings", "label_smoothing", "bos_id", "eos_id"})
    CHECK_FALSE(models::is_model_field(own));
}

TEST_CASE("kind options: attention.type's doc lists the registry's families") {
  std::string doc;
  for (const KeyDoc& k : models::model_keys("decoder_lm"))
    if (k.key == "attention.type") doc = k.doc;
  for (const std::string& family : nn::attention_families()) {
    CAPTURE(family);
    CHECK(doc.find(" " + family + " |") != std::string::npos);
  }
}

TEST_CASE("kind options: an attention says what it mixes and records, whatever its family") {
  auto make = [](const std::string& type) {
    nn::AttentionConfig a;
    a.type = type;
    a.heads = 2;
    a.options = nn::parse_attention_options(json::object(), type, "attention.");
    return nn::make_attention(a.at_width(8));
  };
  CHECK_FALSE(make("softmax")->key_mixture());
  CHECK_FALSE(make("linear")->key_mixture());
  auto mgk = make("mgk");
  const std::optional<nn::KeyMixture> m = mgk->key_mixture();
  REQUIRE(m);
  CHECK(m->keys == 2);
  CHECK(m->component_scores);
  CHECK(m->pi.sizes() == Shape{2, 2});
  const std::optional<nn::KeyMixture> l = make("mlk")->key_mixture();
  REQUIRE(l);
  CHECK_FALSE(l->component_scores);

  mgk->return_weights = true;
  mgk->forward(randn({1, 3, 8}));
  CHECK(mgk->record().weights.sizes() == Shape{1, 2, 3, 3});
  CHECK(mgk->record().scores.sizes() == Shape{1, 2, 2, 3, 3});  // per component
  CHECK(mgk->record().keys.sizes() == Shape{1, 2, 2, 3, 4});
  mgk->clear_record();
  CHECK_FALSE(mgk->record().weights.defined());
  CHECK_FALSE(mgk->record().keys.defined());
}
