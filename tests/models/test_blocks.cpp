// tests/models/test_blocks.cpp — the block keys of every model kind
// (model.norm, model.norm_eps, model.ff, model.bias): defaults that build
// today's models, every combination building, running and costing exactly its
// parameters (the count `keystone info` reports), bias false leaving no bias
// anywhere, and bad values named by key.
#include "support/testing.h"

#include "models/config.h"
#include "models/encoder_classifier.h"
#include "models/model.h"

using namespace ks;
using json = nlohmann::json;

namespace {

const json kKinds[] = {
    {{"model", "decoder_lm"}, {"vocab_size", 13}},
    {{"model", "decoder_lm"}, {"vocab_size", 13}, {"tie_embeddings", true}},
    {{"model", "encoder_classifier"}, {"vocab_size", 13}, {"num_classes", 3}, {"head", "mlp"}},
    {{"model", "encoder_classifier"}, {"vocab_size", 13}, {"num_classes", 3}, {"dual", true}, {"pooling", "cls"}},
    {{"model", "seq2seq"}, {"src_vocab_size", 13}, {"tgt_vocab_size", 13}, {"pad_id", 0}},
    {{"model", "seq2seq"}, {"src_vocab_size", 13}, {"tgt_vocab_size", 13}, {"pad_id", 0}, {"share_embeddings", true}},
};

json small(json j) {
  j.update({{"d_model", 16}, {"max_len", 12}, {"dropout", 0.0}, {"attention", {{"heads", 2}}}});
  if (j["model"] == "seq2seq")
    j.update({{"encoder_layers", 1}, {"decoder_layers", 1}});
  else
    j["layers"] = 2;
  return j;
}

// A training loss of a batch of 2 random sequences (the dual classifier: its logits summed).
Tensor run(models::Model& m, const models::ModelConfig& c) {
  Tensor tokens = randint(1, 13, {2, 6}, {.dtype = kInt64});
  if (c.model == "encoder_classifier" && c.options_as<models::EncoderClassifierOptions>().dual)
    return sum(dynamic_cast<models::EncoderClassifier&>(m).forward(tokens, tokens));
  if (c.model == "encoder_classifier")
    return m.loss(models::Batch{.tokens = tokens, .labels = zeros({2}, {.dtype = kInt64})});
  if (c.model == "seq2seq") return m.loss(models::Batch{.tokens = tokens, .decoder_input = tokens, .targets = tokens});
  return m.loss(models::Batch{.tokens = tokens, .targets = tokens});
}

}  // namespace

TEST_CASE("block keys default to today's model: layernorm, 1e-5, mlp, biases, the resolved config states them") {
  auto m = models::parse_model_config(json{{"vocab_size", 10}});
  CHECK(m.norm == "layernorm");
  CHECK(m.norm_eps == 1e-5);
  CHECK(m.ff == "mlp");
  CHECK(m.bias);
  json r = m.to_json();
  CHECK(r["norm"] == "layernorm");
  CHECK(r["ff"] == "mlp");
  CHECK(r["bias"] == true);
  CHECK(r["norm_eps"] == 1e-5);
  auto llama = models::parse_model_config(
      json{{"vocab_size", 10}, {"norm", "rmsnorm"}, {"norm_eps", 1e-6}, {"ff", "swiglu"}, {"bias", false}});
  CHECK(llama.resolved_d_ff() == 688);  // d 256: the gated rule
  CHECK_FALSE(llama.attention.bias);
  json lr = llama.to_json();
  CHECK(lr["d_ff"] == 688);
  CHECK(models::parse_model_config(lr).to_json() == lr);  // round trip
  // The parameter names of a default model are today's (checkpoints load).
  auto model = models::build_model(models::parse_model_config(small({{"model", "decoder_lm"}, {"vocab_size", 13}})));
  std::vector<std::string> names;
  for (auto& [n, _] : model->named_parameters()) names.push_back(n);
  for (const char* n : {"layers.0.ln1.weight", "layers.0.ln1.bias", "layers.0.ff.fc1.weight", "layers.0.ff.fc1.bias",
                        "layers.0.ff.fc2.bias", "layers.1.ln3.bias", "ln_f.weight", "ln_f.bias"}) {
    CAPTURE(n);
    CHECK(std::find(names.begin(), names.end(), n) != names.end());
  }
}

TEST_CASE("every kind with every norm, feed-forward and bias setting builds, trains, and costs its parameters") {
  manual_seed(4);
  for (const json& kind : kKinds)
    for (const char* norm : {"layernorm", "rmsnorm"})
      for (const char* ff : {"mlp", "swiglu", "geglu"})
        for (bool bias : {true, false})
          for (bool pre : {true, false}) {
            json j = small(kind);
            j.update({{"norm", norm}, {"ff", ff}, {"bias", bias}, {"pre_norm", pre}});
            if (std::string(ff) != "mlp" && !pre) j["d_ff"] = 24;  // an explicit gated width too
            CAPTURE(j.dump());
            auto c = models::parse_model_config(j);
            auto m = models::build_model(c);
            // `keystone info` reports cost().params: it must be the model's own count.
            CHECK(m->cost(6).params == m->num_parameters());
            for (const auto& named : m->named_parameters()) {
              const std::string& name = named.first;  // not a structured binding: CAPTURE's lambda (clang 14)
              CAPTURE(name);
              CHECK((bias || name.find("bias") == std::string::npos));
              if (std::string(ff) != "mlp") CHECK(name.find("fc1") == std::string::npos);
            }
            Tensor loss = run(*m, c);
            CHECK(std::isfinite(loss.item()));
            backward(loss);
          }
}

TEST_CASE("FLOPs per token count the feed-forward's three GEMMs when gated") {
  json base = small({{"model", "decoder_lm"}, {"vocab_size", 13}});
  base["d_ff"] = 24;
  json gated = base;
  gated["ff"] = "swiglu";
  const double mlp = models::build_model(models::parse_model_config(base))->cost(6).flops_per_token;
  const double glu = models::build_model(models::parse_model_config(gated))->cost(6).flops_per_token;
  CHECK(glu - mlp == doctest::Approx(2 /* layers */ * 2.0 * 16 * 24));  // one more d x d_ff GEMM per layer
}

TEST_CASE("bad block values name the key") {
  auto bad = [](json extra) {
    json j = {{"vocab_size", 10}};
    j.update(extra);
    return models::parse_model_config(j);
  };
  CHECK_THROWS_WITH_AS(bad({{"norm", "rmsnrom"}}),
                       "config: norm: unknown norm 'rmsnrom' (expected layernorm or rmsnorm; did you mean rmsnorm?)",
                       Error);
  CHECK_THROWS_WITH_AS(bad({{"norm", "batchnorm"}}),
                       "config: norm: unknown norm 'batchnorm' (expected layernorm or rmsnorm)", Error);
  CHECK_THROWS_WITH_AS(bad({{"norm", 1}}), "config: norm: expected a string, got 1", Error);
  CHECK_THROWS_WITH_AS(bad({{"norm_eps", 0}}), "config: norm_eps: must be a positive finite number, got 0", Error);
  CHECK_THROWS_WITH_AS(bad({{"norm_eps", -1e-6}}), "config: norm_eps: must be a positive finite number, got -1e-06",
                       Error);
  CHECK_THROWS_WITH_AS(
      bad({{"ff", "swigul"}}),
      "config: ff: unknown feed-forward 'swigul' (expected geglu, mlp or swiglu; did you mean swiglu?)", Error);
  CHECK_THROWS_WITH_AS(bad({{"bias", "no"}}), "config: bias: expected true or false, got \"no\"", Error);
  CHECK_THROWS_WITH_AS(bad({{"attention", {{"window", -1}}}}),
                       "config: attention.window must be >= 0 (0: no sliding window), got -1", Error);
  CHECK_THROWS_WITH_AS(bad({{"attention", {{"type", "mgk"}, {"window", 4}}}}),
                       doctest::Contains("config: attention.window: the \"mgk\" family does not take a sliding window"),
                       Error);
  CHECK_THROWS_WITH_AS(bad({{"norm_epz", 1e-6}}),
                       "config: norm_epz: unknown key for model 'decoder_lm' (did you mean norm_eps?)", Error);
  CHECK_THROWS_WITH_AS(models::parse_model_config(json{{"vocab_size", 10}, {"norm", "x"}}, "model."),
                       doctest::Contains("config: model.norm: unknown norm 'x'"), Error);
}
