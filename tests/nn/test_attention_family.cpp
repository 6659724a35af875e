// tests/nn/test_attention_family.cpp — adding an attention family touches one
// file: this one defines a "tempered" family (softmax attention at a learned-
// free temperature, keys and values optionally from one shared projection)
// with its options struct, parser, checks, module and registration, and uses
// it through the ordinary JSON config path: a model is built, trained a step,
// its config round-trips, and a bad option value is refused naming the key.
// Not here: the built-in families' own tests (test_*_attention.cpp).
#include "support/testing.h"

#include <cmath>

#include "models/config.h"
#include "models/decoder_lm.h"
#include "models/model.h"
#include "nn/attention/heads.h"
#include "nn/optim.h"
#include "nn/user_input.h"
#include "ops/elementwise.h"
#include "ops/linalg.h"
#include "ops/softmax.h"
#include "ops/view.h"

using namespace ks;
using json = nlohmann::json;

namespace {

// The family's two options, as its section of the config names them.
struct TemperedOptions : nn::AttentionOptions {
  double temperature = 1.0;  // the scores are q·k / (temperature·√p)
  bool shared_kv = false;    // one projection gives both keys and values

  static TemperedOptions parse(const json& section, const std::string& where) {
    TemperedOptions o;
    nn::read_json_key(section, "temperature", o.temperature, where);
    nn::read_json_key(section, "shared_kv", o.shared_kv, where);
    return o;
  }
  static std::vector<KeyDoc> option_keys() {
    return {{"temperature", "the softmax temperature, > 0"}, {"shared_kv", "one projection for keys and values"}};
  }
  json to_json() const override { return {{"temperature", temperature}, {"shared_kv", shared_kv}}; }
  void validate(const nn::AttentionConfig&) const override {
    KS_CHECK(temperature > 0 && std::isfinite(temperature), "attention.temperature must be positive, got ",
             temperature);
  }
};

class TemperedAttention : public nn::Attention {
 public:
  explicit TemperedAttention(const nn::AttentionConfig& cfg)
      : Attention(cfg, "TemperedAttention"), options(config.options_as<TemperedOptions>()) {
    const int64_t inner = cfg.heads * cfg.resolved_head_dim();
    q = register_module("q", std::make_shared<nn::Linear>(cfg.d_model, inner, cfg.bias));
    k = register_module("k", std::make_shared<nn::Linear>(cfg.resolved_kv_dim(), inner, cfg.bias));
    if (!options.shared_kv)
      v = register_module("v", std::make_shared<nn::Linear>(cfg.resolved_kv_dim(), inner, cfg.bias));
    o = register_module("o", std::make_shared<nn::Linear>(inner, cfg.d_model, cfg.bias));
  }
  using Attention::forward;
  Tensor forward(const Tensor& query, const Tensor& key, const Tensor& value, const nn::AttentionMask& mask,
                 nn::AttentionCache* cache) override {
    nn::check_attention_inputs(config, query, key, value, mask, cache);
    KS_CHECK(!cache, "tempered attention: no decoding cache");
    const int64_t h = config.heads, p = config.resolved_head_dim(), B = query.size(0), T = query.size(1);
    const int64_t S = key.size(1);
    Tensor qh = nn::split_heads(q->forward(query), h, p);  // (B, h, T, p)
    Tensor kh = nn::split_heads(k->forward(key), h, p);    // (B, h, S, p)
    Tensor vh = options.shared_kv ? kh : nn::split_heads(v->forward(value), h, p);
    Tensor scores = matmul(mul(qh, 1.0 / (options.temperature * std::sqrt(double(p)))), transpose(kh, -1, -2));
    Tensor masked = nn::attention_mask(mask, B, T, S, 0, query.device());
    if (masked.defined()) scores = masked_fill(scores, masked, -INFINITY);
    return o->forward(nn::gate_and_merge_heads(*this, matmul(softmax(scores, -1), vh)));  // (B, T, d)
  }

  const TemperedOptions& options;
  std::shared_ptr<nn::Linear> q, k, v, o;  // v null with shared_kv
};

std::shared_ptr<nn::Attention> make_tempered(const nn::AttentionConfig& cfg) {
  return std::make_shared<TemperedAttention>(cfg);
}

nn::AttentionCost tempered_cost(const nn::AttentionConfig& cfg, int64_t, bool) {
  const int64_t d = cfg.d_model, inner = cfg.heads * cfg.resolved_head_dim();
  const int64_t projections = cfg.options_as<TemperedOptions>().shared_kv ? 3 : 4;
  return {.params = projections * inner * d + (cfg.bias ? (projections - 1) * inner + d : 0)};
}

}  // namespace

KS_REGISTER_ATTENTION("tempered", TemperedOptions, make_tempered, tempered_cost);

namespace {

const char* kModel = R"({"model": "decoder_lm", "vocab_size": 11, "d_model": 8, "layers": 1, "max_len": 8,
  "dropout": 0, "attention": {"type": "tempered", "heads": 2, "temperature": 2.5, "shared_kv": true}})";

models::ModelConfig parse(const json& j) { return models::parse_model_config(j); }

}  // namespace

TEST_CASE("a family defined in one file builds through the config, trains, round-trips and checks its options") {
  const models::ModelConfig cfg = parse(json::parse(kModel));
  CHECK(cfg.attention.options_as<TemperedOptions>().temperature == 2.5);

  manual_seed(5);
  auto model = std::dynamic_pointer_cast<models::DecoderLM>(models::build_model(cfg));
  REQUIRE(model);
  const auto sites = nn::named_attention(*model);
  REQUIRE(sites.size() == 1);
  auto* attn = dynamic_cast<TemperedAttention*>(sites[0].second);
  REQUIRE(attn);
  CHECK(attn->options.shared_kv);
  CHECK_FALSE(attn->v);
  CHECK(model->cost(8).params == model->num_parameters());

  // One training step moves the attention's weights and lowers the loss on the batch.
  Tensor inputs = from_vector(std::vector<int64_t>{1, 2, 3, 4, 5, 7, 8, 9, 10, 1}, {2, 5});
  Tensor targets = from_vector(std::vector<int64_t>{2, 3, 4, 5, 6, 8, 9, 10, 1, 2}, {2, 5});
  nn::AdamW opt(nn::decay_groups(*model, 0.01), {.lr = 1e-2});
  const std::vector<float> before = attn->k->weight.to_vector<float>();
  Tensor loss = model->loss(inputs, targets);
  const double first = loss.item();
  CHECK(std::isfinite(first));
  backward(loss);
  opt.step();
  CHECK(attn->k->weight.to_vector<float>() != before);
  CHECK(model->loss(inputs, targets).item() < first);

  // to_json -> parse gives the same config, the family's keys in it.
  const json written = cfg.to_json();
  CHECK(written["attention"]["temperature"] == 2.5);
  CHECK(written["attention"]["shared_kv"] == true);
  CHECK(parse(written).to_json() == written);
  // Its keys are documented beside the others (keystone config --defaults).
  bool documented = false;
  for (const KeyDoc& k : models::model_keys("decoder_lm"))
    documented = documented || (k.key == "attention.temperature" && k.doc == "tempered: the softmax temperature, > 0");
  CHECK(documented);

  // A bad value, a wrong type, and the key on another family name the key.
  json bad = json::parse(kModel);
  bad["attention"]["temperature"] = -1;
  CHECK_THROWS_WITH_AS(parse(bad), "config: attention.temperature must be positive, got -1", Error);
  bad["attention"]["temperature"] = "hot";
  CHECK_THROWS_WITH_AS(parse(bad), "config: attention.temperature: expected a number, got \"hot\"", Error);
  bad["attention"]["temperature"] = 3;
  bad["attention"]["shared_kv"] = false;
  bad["attention"]["type"] = "softmax";
  CHECK_THROWS_WITH_AS(parse(bad), "config: attention.temperature applies to tempered only, not 'softmax'", Error);
  bad["attention"]["temperature"] = 1;  // its defaults: what a resolved softmax config lists
  CHECK(parse(bad).attention.type == "softmax");
}
