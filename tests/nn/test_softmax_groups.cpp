// tests/nn/test_softmax_groups.cpp — grouped-query / multi-query attention
// (attention.kv_heads) and ALiBi (attention.alibi) in the "softmax" and
// "fixed" families: a loop reference (head n reads key/value head
// n / (h / kv_heads), scores get −m_n·|i − j| with the paper's slopes:
// tests/nn/softmax_reference.h), float64 gradchecks of the module, cached
// decoding against full recomputation with the cache at (B, kv_heads, S, p),
// the return_weights path against the fused one, kv_heads = heads identical
// to no kv_heads, parameter and cache counts, and the config errors (other
// families named).
// Not here: the op's own tests (tests/ops/test_attention_groups.cpp).
#include <cmath>

#include "nn/softmax_reference.h"  // tests/nn/

using namespace ks;
using namespace ks::testing;

namespace {

using V = const std::vector<Tensor>&;

nn::AttentionConfig config(const std::string& type, int64_t d, int64_t h, int64_t g, bool alibi, int64_t p = 0) {
  return {.type = type, .d_model = d, .heads = h, .head_dim = p, .kv_heads = g, .alibi = alibi};
}

std::shared_ptr<nn::MultiHeadAttention> make(const nn::AttentionConfig& c, DType dt = kFloat64, uint64_t seed = 7) {
  return seeded_attention<nn::MultiHeadAttention>(c, dt, seed);
}

const nn::AttentionMask kCausal{true, Tensor()};

}  // namespace

TEST_CASE("grouped-query attention and ALiBi match a loop reference, causal, padded and bidirectional") {
  for (const char* type : {"softmax", "fixed"})
    for (int64_t g : {1, 2, 4})  // 1: multi-query; 4 = heads
      for (bool alibi : {false, true}) {
        CAPTURE(type);
        CAPTURE(g);
        CAPTURE(alibi);
        auto m = make(config(type, 8, 4, g, alibi, std::string(type) == "fixed" ? 3 : 0));
        Tensor x = input({2, 5, 8}, 1);
        check_close(m->forward(x, kCausal), mha_ref(*m, x, x, x, causal_mask()), 1e-12, 1e-10);
        check_close(m->forward(x), mha_ref(*m, x, x, x, no_mask()), 1e-12, 1e-10);
        Tensor pad = bool_tensor({0, 0, 0, 1, 1, 0, 1, 0, 0, 0}, {2, 5});
        check_close(m->forward(x, {.causal = true, .key_padding = pad}),
                    mha_ref(*m, x, x, x,
                            [&](int64_t b, int64_t i, int64_t j) {
                              return causal_mask()(b, i, j) || padding_mask(pad)(b, i, j);
                            }),
                    1e-12, 1e-10);
        CHECK(m->k->out_features == g * m->config.resolved_head_dim());
        // float32 against the same reference.
        auto m32 = make(m->config, kFloat32);
        Tensor x32 = input({2, 5, 8}, 5, kFloat32);
        check_close(m32->forward(x32, kCausal), mha_ref(*m32, x32, x32, x32, causal_mask()), 1e-5, 1e-4);
      }
}

TEST_CASE("grouped-query attention with ALiBi: module gradcheck in float64") {
  for (int64_t g : {1, 2}) {
    CAPTURE(g);
    auto m = make(config("softmax", 4, 4, g, true));
    Tensor x = leaf64({2, 3, 4}, 11);
    std::vector<Tensor> in{x};
    for (const Tensor& p : m->parameters()) in.push_back(p);
    CHECK_GRADCHECK([&](V a) { return m->forward(a[0], kCausal); }, in);
  }
}

TEST_CASE("grouped-query attention with ALiBi: cached decoding equals full recomputation, the cache is (B, g, S, p)") {
  for (int64_t g : {1, 2, 4})
    for (bool alibi : {false, true}) {
      CAPTURE(g);
      CAPTURE(alibi);
      auto m = make(config("fixed", 8, 4, g, alibi, 3));
      Tensor x = input({2, 7, 8}, 41);
      Tensor pad = bool_tensor({0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 0, 1, 0, 0}, {2, 7});
      Tensor full = m->forward(x, {.causal = true, .key_padding = pad});
      nn::AttentionCache cache;
      std::vector<Tensor> steps;
      steps.push_back(m->forward(narrow(x, 1, 0, 3), {.causal = true, .key_padding = narrow(pad, 1, 0, 3)}, &cache));
      for (int64_t t = 3; t < 7; ++t)
        steps.push_back(m->forward(narrow(x, 1, t, 1), {.causal = true, .key_padding = narrow(pad, 1, t, 1)}, &cache));
      check_close(cat(steps, 1), full, 1e-12, 1e-10);
      CHECK(cache.k.sizes() == Shape{2, g, 7, 3});
      CHECK(cache.v.sizes() == Shape{2, g, 7, 3});
      // The analysis path (return_weights: composed ops) agrees step for step, and its weights with the reference.
      m->return_weights = true;
      nn::AttentionCache c2;
      std::vector<Tensor> composed;
      composed.push_back(m->forward(narrow(x, 1, 0, 3), kCausal, &c2));
      for (int64_t t = 3; t < 7; ++t) composed.push_back(m->forward(narrow(x, 1, t, 1), kCausal, &c2));
      m->return_weights = false;
      check_close(cat(composed, 1), m->forward(x, kCausal), 1e-12, 1e-10);
      Vec w;
      mha_ref(*m, x, x, x, causal_mask(), &w);
      m->return_weights = true;
      m->forward(x, kCausal);
      check_close(m->record().weights, w, 1e-12, 1e-10);
      m->return_weights = false;
    }
}

TEST_CASE("kv_heads = heads is the plain multi-head layer, output for output") {
  auto plain = make(config("softmax", 8, 4, 0, false), kFloat32, 3);
  auto same = make(config("softmax", 8, 4, 4, false), kFloat32, 3);
  CHECK(plain->num_parameters() == same->num_parameters());
  Tensor x = input({2, 6, 8}, 71, kFloat32);
  CHECK(plain->forward(x, kCausal).to_vector<float>() == same->forward(x, kCausal).to_vector<float>());
}

TEST_CASE("grouped-query attention: parameters, FLOPs and the cache shrink with kv_heads") {
  for (int64_t g : {1, 2, 4}) {
    CAPTURE(g);
    auto c = config("softmax", 8, 4, g, false);
    auto m = make(c);
    const int64_t p = 2;
    CHECK(m->num_parameters() == 2 * 4 * p * 8 + 2 * g * p * 8 + 4 * p + 2 * g * p + 8);
    const nn::AttentionCost cost = nn::attention_cost(c, 16, true);
    CHECK(cost.params == m->num_parameters());
    CHECK(cost.cache_floats_per_position == 2.0 * double(g * p));
    c.bias = false;
    CHECK(nn::attention_cost(c, 16, true).params == 2 * 4 * p * 8 + 2 * g * p * 8);
  }
  CHECK(nn::attention_cost(config("softmax", 8, 4, 1, false), 64, true).flops_per_token <
        nn::attention_cost(config("softmax", 8, 4, 4, false), 64, true).flops_per_token);
  CHECK(nn::attention_cost(config("softmax", 8, 4, 4, true), 64, true).flops_per_token >
        nn::attention_cost(config("softmax", 8, 4, 4, false), 64, true).flops_per_token);
}

TEST_CASE("kv_heads and alibi config errors name the field and the families that take them") {
  CHECK_THROWS_WITH_AS(nn::make_attention(config("softmax", 8, 4, 3, false)),
                       "attention.kv_heads: 3 key/value heads do not divide 4 heads (each key/value head serves an "
                       "equal group of query heads)",
                       Error);
  CHECK_THROWS_WITH_AS(nn::make_attention(config("softmax", 8, 4, -1, false)),
                       "attention.kv_heads must be >= 0 (0 means heads), got -1", Error);
  for (const char* type : {"mgk", "smgk", "linear", "mlk"}) {
    CAPTURE(type);
    const std::string groups = std::string("attention.kv_heads: the \"") + type +
                               "\" family has one key/value head per query head, got kv_heads 2 for 4 heads "
                               "(grouped-query attention: fixed and softmax)";
    CHECK_THROWS_WITH_AS(nn::make_attention(config(type, 8, 4, 2, false)), groups.c_str(), Error);
    const std::string alibi =
        std::string("attention.alibi: the \"") + type + "\" family does not take ALiBi (fixed and softmax do)";
    CHECK_THROWS_WITH_AS(nn::make_attention(config(type, 8, 4, 0, true)), alibi.c_str(), Error);
    // kv_heads = heads is every family's own layout.
    CHECK_NOTHROW(nn::make_attention(config(type, 8, 4, 4, false)));
  }
}
