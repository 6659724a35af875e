// tests/tools/test_analyze.cpp — `keystone analyze`'s measurements on cases
// whose answer is known (tools/analyze/analysis_collect.h, analysis_pruning.h,
// head_mask.h): two heads with identical weights have divergence 0 and
// cosine 1; a head of size p = 2 has score rank <= 2 at any length; the
// importance equals a finite-difference estimate of the loss change; masking
// every head but one gives the loss of a model whose other heads' output
// weights are zero; MGK's statistics are in range; head-mask parsing and its
// errors. The command's files and exit codes: tests/tools/test_cli.sh.
#include <doctest/doctest.h>

#include <cmath>

#include "autograd/grad_mode.h"
#include "core/factory.h"
#include "core/random.h"
#include "datasets/dataset.h"
#include "datasets/loader.h"
#include "models/decoder_lm.h"
#include "nn/attention/mgk_attention.h"
#include "nn/attention/softmax_attention.h"
#include "ops/view.h"
#include "tools/analyze/analysis_collect.h"
#include "tools/analyze/analysis_pruning.h"
#include "tools/analyze/head_mask.h"
#include "tools/cli/cli.h"
#include "tools/train/task.h"

using namespace ks;
using namespace ks::tools;
using json = nlohmann::json;

namespace {

std::shared_ptr<models::DecoderLM> tiny_lm(const std::string& family, int64_t heads, int64_t head_dim = 0,
                                           int64_t layers = 2) {
  models::ModelConfig c;
  c.model = "decoder_lm";
  c.d_model = 16;
  c.layers = layers;
  c.max_len = 64;
  c.vocab_size = 23;
  c.dropout = 0;
  c.attention.type = family;
  c.attention.heads = heads;
  c.attention.head_dim = head_dim;
  manual_seed(5);
  auto m = std::dynamic_pointer_cast<models::DecoderLM>(models::build_model(c));
  REQUIRE(m);
  m->eval();
  return m;
}

// A language-model data set of `n` random windows of `len` tokens.
data::Dataset lm_split(int64_t n, int64_t len, uint64_t seed) {
  data::Dataset d;
  d.task = data::Task::LanguageModel;
  Generator g(seed);
  const std::vector<int64_t> ids = randint(3, 23, {n, len + 1}, {}, &g).to_vector<int64_t>();
  for (int64_t e = 0; e < n; ++e) {
    data::Example ex;
    for (int64_t t = 0; t < len; ++t) {
      ex.tokens.push_back(int32_t(ids[size_t(e * (len + 1) + t)]));
      ex.target.push_back(int32_t(ids[size_t(e * (len + 1) + t + 1)]));
    }
    d.examples.push_back(std::move(ex));
  }
  d.vocab_size = 23;
  return d;
}

data::Batch batch_of(const data::Dataset& d, int64_t size) {
  data::DataLoader loader(std::make_shared<const data::Dataset>(d), {.batch_size = size, .shuffle = false});
  return *loader.next();
}

// Head 1 of every site made a copy of head 0: its rows of W_q, W_k, W_v (and biases).
void duplicate_head(models::Model& model, int64_t head_dim) {
  for (auto& [name, attn] : nn::named_attention(model)) {
    auto* mha = dynamic_cast<nn::MultiHeadAttention*>(attn);
    REQUIRE(mha);
    for (nn::Linear* l : {mha->q.get(), mha->k.get(), mha->v.get()}) {
      std::vector<float> w = l->weight.to_vector<float>();
      const int64_t in = l->in_features;
      for (int64_t r = 0; r < head_dim; ++r)
        for (int64_t c = 0; c < in; ++c) w[size_t((head_dim + r) * in + c)] = w[size_t(r * in + c)];
      l->weight = from_vector(w, l->weight.sizes());
      std::vector<float> b = l->bias.to_vector<float>();
      for (int64_t r = 0; r < head_dim; ++r) b[size_t(head_dim + r)] = b[size_t(r)];
      l->bias = from_vector(b, l->bias.sizes());
    }
  }
}

}  // namespace

TEST_CASE("analysis: two heads with identical weights have divergence 0 and cosine 1, different heads do not") {
  auto model = tiny_lm("softmax", 4);
  duplicate_head(*model, 4);
  const data::Dataset d = lm_split(6, 12, 1);
  AttentionCollector c(*model, {.map_examples = 1, .rank_examples = 1}, nullptr, nullptr);
  c.add(batch_of(d, 6));
  const json sites = c.site_summaries();
  REQUIRE(sites.size() == 2);
  for (const json& s : sites) {
    CAPTURE(s["name"].get<std::string>());
    CHECK(s["queries"].get<int64_t>() == 6 * 12);
    CHECK(s["js"][0][1].get<double>() == doctest::Approx(0).epsilon(1e-9));
    CHECK(s["cosine"][0][1].get<double>() == doctest::Approx(1).epsilon(1e-6));
    CHECK(s["js"][0][2].get<double>() > 1e-4);
    CHECK(s["cosine"][0][2].get<double>() < 0.999);
    CHECK(s["js"][2][2].get<double>() == 0);
    CHECK(s["js"][2][3].get<double>() <= std::log(2.0));
  }
  // one map per site for the one example, every query and key counted
  REQUIRE(c.maps().size() == 2);
  CHECK(c.maps()[0].rows == 12);
  CHECK(c.maps()[0].cols == 12);
  CHECK(c.maps()[0].weights.size() == size_t(4 * 12 * 12));
}

TEST_CASE("analysis: a head of size p = 2 has score rank at most 2 at any length, the attention matrix far more") {
  auto model = tiny_lm("fixed", 3, /*head_dim=*/2, /*layers=*/1);
  const data::Dataset d = lm_split(2, 40, 2);
  AttentionCollector c(*model, {.map_examples = 0, .rank_examples = 2, .rank_tolerance = 1e-6}, nullptr, nullptr);
  c.add(batch_of(d, 2));
  const json site = c.site_summaries()[0];
  const json& examples = site["rank"]["examples"];
  REQUIRE(examples.size() == 2);
  for (const json& ex : examples) {
    CHECK(ex["rows"].get<int64_t>() == 40);
    for (const json& head : ex["heads"]) {
      CHECK(head["scores"]["numerical_rank"].get<int64_t>() <= 2);
      CHECK(head["scores"]["singular_values"].size() == 40);
      CHECK(head["scores"]["effective_rank"].get<double>() <= 2.0 + 1e-9);
      CHECK(head["attention"]["numerical_rank"].get<int64_t>() > 2);  // causal softmax: lower triangular, full rank
    }
  }
}

TEST_CASE("analysis: MGK sites report pi, responsibilities and key distances in range") {
  auto model = tiny_lm("mgk", 2, 0, 1);
  const data::Dataset d = lm_split(3, 10, 3);
  AttentionCollector c(*model, {.map_examples = 1, .rank_examples = 1}, nullptr, nullptr);
  c.add(batch_of(d, 3));
  const json site = c.site_summaries()[0];
  REQUIRE(site.contains("mgk"));
  const json& m = site["mgk"];
  for (int h = 0; h < 2; ++h) {
    CHECK(m["pi"][h][0].get<double>() + m["pi"][h][1].get<double>() == doctest::Approx(1));
    CHECK(m["responsibility_entropy"][h].get<double>() >= 0);
    CHECK(m["responsibility_entropy"][h].get<double>() <= std::log(2.0) + 1e-12);
    CHECK(m["component_wins"][h][0].get<double>() + m["component_wins"][h][1].get<double>() == doctest::Approx(1));
    CHECK(m["key_distance"][h].get<double>() > 0);
  }
  const json& head = site["rank"]["examples"][0]["heads"][0];
  CHECK(head["components"].size() == 2);
  CHECK(head.contains("mixture"));
}

TEST_CASE("analysis: importance equals a finite-difference estimate of the loss change") {
  auto model = tiny_lm("softmax", 2, 0, 2);
  const data::Dataset d = lm_split(4, 8, 4);
  const std::vector<AttentionSite> sites = attention_sites(*model);
  // one batch: the importance is |dL/dξ| of that batch's mean loss
  const auto importance = head_importance(*model, sites, d, 4, 1);
  const data::Batch b = batch_of(d, 4);
  auto loss_at = [&](int64_t site, int64_t head, float value) {
    NoGradGuard no_grad;
    set_head_gates(sites, {}, Device::cpu());
    std::vector<float> g{1, 1};
    g[size_t(head)] = value;
    sites[size_t(site)].attn->head_gate = from_vector(g, {2});
    const double l = batch_loss(*model, b).item<double>();
    clear_head_gates(sites);
    return l;
  };
  const float eps = 1e-2f;
  for (int64_t s = 0; s < 2; ++s)
    for (int64_t h = 0; h < 2; ++h) {
      CAPTURE(s);
      CAPTURE(h);
      const double fd = (loss_at(s, h, 1 + eps) - loss_at(s, h, 1 - eps)) / (2 * eps);
      CHECK(importance[size_t(s)][size_t(h)] == doctest::Approx(std::fabs(fd)).epsilon(2e-2));
    }
  for (const AttentionSite& s : sites) CHECK(!s.attn->head_gate.defined());  // cleared
}

TEST_CASE("analysis: masking every head but one gives the loss of zeroed output weights for the others") {
  auto model = tiny_lm("softmax", 4, 0, 1);
  const data::Dataset d = lm_split(4, 10, 5);
  const std::vector<AttentionSite> sites = attention_sites(*model);
  const EvalOptions eo{.batch_size = 4};
  set_head_gates(sites, parse_head_mask("0:0,0:1,0:3", sites), Device::cpu());
  const double masked = evaluate(*model, d, eo).loss;
  clear_head_gates(sites);
  auto* mha = dynamic_cast<nn::MultiHeadAttention*>(sites[0].attn);
  std::vector<float> w = mha->o->weight.to_vector<float>();
  const int64_t in = mha->o->in_features;
  for (int64_t r = 0; r < mha->o->out_features; ++r)
    for (int64_t c = 0; c < in; ++c)
      if (c / 4 != 2) w[size_t(r * in + c)] = 0;
  mha->o->weight = from_vector(w, mha->o->weight.sizes());
  CHECK(evaluate(*model, d, eo).loss == doctest::Approx(masked).epsilon(1e-6));

  // the pruning curve stops with one head per site and starts unmasked
  auto fresh = tiny_lm("softmax", 4, 0, 2);
  const std::vector<AttentionSite> fs = attention_sites(*fresh);
  const auto importance = head_importance(*fresh, fs, d, 4, 1);
  const auto curve = pruning_curve(*fresh, fs, importance, d, eo);
  REQUIRE(curve.size() == 1 + 2 * 3);
  CHECK(!curve.front().head);
  CHECK(curve.front().result.loss == doctest::Approx(evaluate(*fresh, d, eo).loss));
  std::vector<int64_t> per_site(2, 0);
  for (size_t i = 1; i < curve.size(); ++i) ++per_site[size_t(curve[i].head->site)];
  CHECK(per_site == std::vector<int64_t>{3, 3});
}

TEST_CASE("head masks: SITE:HEAD by number or name, and errors that name the entry") {
  auto model = tiny_lm("softmax", 2, 0, 2);
  const std::vector<AttentionSite> sites = attention_sites(*model);
  REQUIRE(sites.size() == 2);
  CHECK(sites[1].name == "layers.1.self_attn");
  CHECK(sites[1].kind == "self");
  CHECK(parse_head_mask("0:1,layers.1.self_attn:0", sites) == std::vector<HeadRef>{{0, 1}, {1, 0}});
  auto error = [&](const std::string& spec) {
    try {
      parse_head_mask(spec, sites);
    } catch (const cli::UsageError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(error("0-1").find("is not SITE:HEAD") != std::string::npos);
  CHECK(error("").find("is not SITE:HEAD") != std::string::npos);
  CHECK(error("0:1,").find("is not SITE:HEAD") != std::string::npos);
  CHECK(error("2:0").find("site 2 does not exist (the model has 2 attention sites") != std::string::npos);
  CHECK(error("enc:0").find("no attention site named 'enc'") != std::string::npos);
  CHECK(error("0:2").find("head '2' is not one of site 0's 2 heads") != std::string::npos);
  CHECK(error("0:x").find("head 'x'") != std::string::npos);
  CHECK(error("0:1,0:1").find("is given twice") != std::string::npos);
}

TEST_CASE("analysis: every attention family and MGK variant gives in-range statistics and spectra") {
  struct Variant {
    std::string family;
    bool hard = false, soft = false;
  };
  for (const Variant& v : {Variant{"softmax"}, Variant{"fixed"}, Variant{"mgk"}, Variant{"mgk", true},
                           Variant{"mgk", false, true}, Variant{"smgk"}, Variant{"linear"}, Variant{"mlk"}}) {
    CAPTURE(v.family);
    CAPTURE(v.hard);
    CAPTURE(v.soft);
    models::ModelConfig c;
    c.d_model = 16;
    c.layers = 1;
    c.max_len = 32;
    c.vocab_size = 23;
    c.dropout = 0;
    c.attention.type = v.family;
    c.attention.heads = 2;
    c.attention.head_dim = v.family == "fixed" ? 3 : 0;
    if (v.hard || v.soft) {
      nn::MgkOptions o;
      o.hard_e = v.hard;
      o.soft_e = v.soft;
      c.attention.with_options(o);
    }
    manual_seed(9);
    auto model = models::build_model(c);
    model->eval();
    const data::Dataset d = lm_split(2, 9, 6);
    AttentionCollector col(*model, {.map_examples = 1, .rank_examples = 1}, nullptr, nullptr);
    col.add(batch_of(d, 2));
    const json site = col.site_summaries()[0];
    CHECK(site["queries"].get<int64_t>() == 18);
    const double js = site["js"][0][1].get<double>();
    CHECK(js >= 0);
    CHECK(js <= std::log(2.0) + 1e-12);
    const json& head = site["rank"]["examples"][0]["heads"][0];
    CHECK(head["attention"]["singular_values"].size() == 9);
    const bool mixture = v.family == "mgk" || v.family == "smgk";
    CHECK(head.contains(mixture ? "mixture" : "scores"));
    if (v.family == "fixed") CHECK(head["scores"]["numerical_rank"].get<int64_t>() <= 3);
    CHECK(site.contains("mgk") == (mixture || v.family == "mlk"));
    REQUIRE(col.maps().size() == 1);
    for (float w : col.maps()[0].weights) CHECK((w >= 0 && w <= 1));
    const auto importance = head_importance(*model, attention_sites(*model), d, 2, 1);
    CHECK(importance[0].size() == 2);
  }
}
