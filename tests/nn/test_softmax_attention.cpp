// tests/nn/test_softmax_attention.cpp — the "softmax" and "fixed" attention
// families: a loop reference of softmax(QKᵀ/√p + mask)V per head then W_o
// (tests/nn/softmax_reference.h), float64 gradchecks of the whole module,
// causal and padding masks, cached decoding against full recomputation
// (growing and static caches), returned weights, sliding windows, q/k/v-only
// biases, "fixed" == "softmax" at p = d/h, parameter counts, config errors.
#include <cmath>

#include "nn/attention/mgk_attention.h"
#include "nn/attention/softmax_attention.h"
#include "nn/softmax_reference.h"  // tests/nn/

using namespace ks;
using namespace ks::testing;

namespace {

using V = const std::vector<Tensor>&;
const nn::AttentionMask kCausal{true, Tensor()};

nn::AttentionConfig config(const std::string& type, int64_t d, int64_t h, int64_t p = 0, int64_t kv = 0) {
  return {.type = type, .d_model = d, .kv_dim = kv, .heads = h, .head_dim = p};
}

std::shared_ptr<nn::MultiHeadAttention> make(const nn::AttentionConfig& c, DType dt = kFloat64, uint64_t seed = 7) {
  return seeded_attention<nn::MultiHeadAttention>(c, dt, seed);
}

}  // namespace

TEST_CASE("softmax attention matches a loop reference: self, causal, padded, cross, float32") {
  for (const char* type : {"softmax", "fixed"}) {
    CAPTURE(type);
    auto c = config(type, 8, 2, std::string(type) == "fixed" ? 4 : 0);
    auto m = make(c);
    Tensor x = input({2, 5, 8}, 1);
    check_close(m->forward(x), mha_ref(*m, x, x, x, no_mask()), 1e-12, 1e-10);
    check_close(m->forward(x, kCausal), mha_ref(*m, x, x, x, causal_mask()), 1e-12, 1e-10);
    Tensor pad = bool_tensor({0, 0, 0, 1, 1, 0, 1, 0, 0, 0}, {2, 5});
    check_close(
        m->forward(x, {.causal = true, .key_padding = pad}),
        mha_ref(*m, x, x, x,
                [&](int64_t b, int64_t i, int64_t j) { return causal_mask()(b, i, j) || padding_mask(pad)(b, i, j); }),
        1e-12, 1e-10);
  }
  // Cross-attention: queries (2, 3, 8) over 4 keys of width 6, value != key.
  auto c = config("softmax", 8, 4, 0, 6);
  auto m = make(c);
  Tensor q = input({2, 3, 8}, 2), k = input({2, 4, 6}, 3), v = input({2, 4, 6}, 4);
  check_close(m->forward(q, k, v), mha_ref(*m, q, k, v, no_mask()), 1e-12, 1e-10);
  // float32 against the same reference.
  auto m32 = make(config("softmax", 8, 2), kFloat32);
  Tensor x32 = input({2, 5, 8}, 5, kFloat32);
  check_close(m32->forward(x32, kCausal), mha_ref(*m32, x32, x32, x32, causal_mask()), 1e-5, 1e-4);
}

TEST_CASE("softmax attention gradcheck in float64 over inputs and every parameter") {
  for (const char* type : {"softmax", "fixed"}) {
    CAPTURE(type);
    auto m = make(config(type, 4, 2, std::string(type) == "fixed" ? 3 : 0));
    Tensor x = leaf64({2, 3, 4}, 11);
    std::vector<Tensor> in{x};
    for (const Tensor& p : m->parameters()) in.push_back(p);
    CHECK_GRADCHECK([&](V a) { return m->forward(a[0], kCausal); }, in);
    // Cross-attention with a padded key: key and value as separate inputs.
    Tensor k = leaf64({2, 4, 4}, 12, Layout::Permuted), v = leaf64({2, 4, 4}, 13, Layout::Sliced);
    Tensor pad = bool_tensor({0, 0, 1, 0, 0, 0, 0, 0}, {2, 4});
    CHECK_GRADCHECK([&](V a) { return m->forward(a[0], a[1], a[2], {.key_padding = pad}); }, {x, k, v});
  }
}

TEST_CASE("causal softmax attention never leaks: future tokens change no earlier output or gradient") {
  auto m = make(config("softmax", 8, 2));
  Tensor x = input({2, 6, 8}, 21);
  Tensor y = m->forward(x, kCausal);
  for (int64_t t0 = 1; t0 < 6; ++t0) {
    CAPTURE(t0);
    // New values from t0 on.
    Tensor x2 = cat({narrow(x, 1, 0, t0), input({2, 6 - t0, 8}, 22 + uint64_t(t0))}, 1);
    Tensor y2 = m->forward(x2, kCausal);
    check_close(narrow(y2, 1, 0, t0), narrow(y, 1, 0, t0), 1e-14, 0);
  }
  // The gradient of earlier outputs reaches no later input.
  Tensor xl = detach(x);
  xl.set_requires_grad(true);
  backward(sum(narrow(m->forward(xl, kCausal), 1, 0, 3)));
  check_close(narrow(xl.grad(), 1, 3, 3), Vec(2 * 3 * 8, 0.0), 0, 0);
  CHECK(sum(abs(narrow(xl.grad(), 1, 0, 3))).item() > 0);
}

TEST_CASE("padded keys do not affect any output, and a fully padded row gives the output bias") {
  auto m = make(config("softmax", 8, 2));
  Tensor x = input({2, 5, 8}, 31);
  Tensor pad = bool_tensor({0, 1, 0, 0, 1, 0, 0, 0, 1, 1}, {2, 5});
  Tensor y = m->forward(x, x, x, {.key_padding = pad});
  // Replace the padded positions' keys/values: nothing changes.
  Tensor noise = input({2, 5, 8}, 32);
  Tensor kv = where(unsqueeze(pad, -1), noise, x);
  check_close(m->forward(x, kv, kv, {.key_padding = pad}), y, 1e-14, 0);
  // Every key padded: the attention rows are zero, the output is o's bias.
  Tensor all = bool_tensor({1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, {2, 5});
  Tensor z = m->forward(x, {.key_padding = all});
  CHECK_FALSE(std::isnan(sum(z).item()));
  check_close(z, expand(m->o->bias, {2, 5, 8}), 1e-14, 0);
}

TEST_CASE("cached decoding one token at a time equals full recomputation") {
  for (const char* type : {"softmax", "fixed"}) {
    CAPTURE(type);
    auto m = make(config(type, 8, 2, std::string(type) == "fixed" ? 3 : 0));
    Tensor x = input({2, 6, 8}, 41);
    Tensor pad = bool_tensor({0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 1, 0}, {2, 6});
    const nn::AttentionCache cache = check_cached_decoding(*m, x, pad);
    CHECK(cache.k.sizes() == Shape{2, 2, 6, m->config.resolved_head_dim()});
    CHECK(cache.v.sizes() == Shape{2, 2, 6, m->config.resolved_head_dim()});
    // Without masks after the first step, padding seen earlier still holds.
    nn::AttentionCache c2;
    Tensor head = m->forward(narrow(x, 1, 0, 3), {.causal = true, .key_padding = narrow(pad, 1, 0, 3)}, &c2);
    Tensor rest = m->forward(narrow(x, 1, 3, 3), kCausal, &c2);
    Tensor pad_prefix = cat({narrow(pad, 1, 0, 3), zeros({2, 3}, {.dtype = kBool})}, 1);
    check_close(cat({head, rest}, 1), m->forward(x, {.causal = true, .key_padding = pad_prefix}), 1e-12, 1e-10);
  }
}

TEST_CASE("a sliding window (Mistral's): loop reference, cached decoding, the weights path, and out_bias false") {
  for (const char* type : {"softmax", "fixed"}) {
    CAPTURE(type);
    nn::AttentionConfig cfg = config(type, 8, 2, std::string(type) == "fixed" ? 3 : 0);
    cfg.window = 3;  // position i sees i − 2 .. i
    auto m = make(cfg);
    Tensor x = input({2, 7, 8}, 43);
    const auto windowed = [](int64_t, int64_t i, int64_t j) { return j > i || j <= i - 3; };
    Tensor full = m->forward(x, kCausal);
    check_close(full, mha_ref(*m, x, x, x, windowed), 1e-12, 1e-10);
    // A two-token prefill, then single tokens: each step's window over the cache.
    nn::AttentionCache cache;
    std::vector<Tensor> steps{m->forward(narrow(x, 1, 0, 2), kCausal, &cache)};
    for (int64_t t = 2; t < 7; ++t) steps.push_back(m->forward(narrow(x, 1, t, 1), kCausal, &cache));
    check_close(cat(steps, 1), full, 1e-12, 1e-10);
    // The weights path masks as the fused op does.
    m->return_weights = true;
    check_close(m->forward(x, kCausal), full, 1e-12, 1e-10);
    Vec ref;
    mha_ref(*m, x, x, x, windowed, &ref);
    check_close(m->record().weights, ref, 1e-12, 1e-10);
    m->return_weights = false;
    CHECK_THROWS_WITH_AS(m->forward(x, {}), doctest::Contains("is a sliding window over causal self-attention"), Error);
  }
  // A window costs fewer products per token once the sequence is longer than it.
  nn::AttentionConfig w = config("softmax", 8, 2);
  w.window = 4;
  CHECK(nn::attention_cost(w, 64, true).flops_per_token <
        nn::attention_cost(config("softmax", 8, 2), 64, true).flops_per_token);
  // out_bias false: q, k and v keep their biases, the output projection has none (Qwen2).
  nn::AttentionConfig qkv = config("softmax", 8, 2);
  qkv.out_bias = false;
  auto q = make(qkv);
  CHECK(q->num_parameters() == 4 * 8 * 8 + 3 * 8);
  CHECK(nn::attention_cost(qkv, 16, false).params == q->num_parameters());
  Tensor x = input({2, 5, 8}, 44);
  check_close(q->forward(x, kCausal), mha_ref(*q, x, x, x, causal_mask()), 1e-12, 1e-10);
}

TEST_CASE("cross-attention static cache projects the memory once and reuses it") {
  auto m = make(config("softmax", 8, 2, 0, 6));
  Tensor q = input({2, 4, 8}, 51), mem = input({2, 5, 6}, 52);
  Tensor pad = bool_tensor({0, 0, 0, 0, 1, 0, 1, 0, 0, 0}, {2, 5});
  // Later steps: the memory (even a different one) and its padding are not read again.
  auto [full, cache] = check_static_cache(*m, q, mem, pad, input({2, 5, 6}, 53));
  CHECK(cache.k.sizes() == Shape{2, 2, 5, 4});
  // Undefined key/value are fine once the cache holds the memory.
  check_close(m->forward(narrow(q, 1, 3, 1), Tensor(), Tensor(), {}, &cache), narrow(full, 1, 3, 1), 1e-12, 1e-10);
}

TEST_CASE("return_weights stores (B, h, T, S) probabilities whose rows sum to 1") {
  auto m = make(config("softmax", 8, 2));
  Tensor x = input({2, 5, 8}, 61);
  Tensor pad = bool_tensor({0, 0, 0, 0, 1, 0, 0, 0, 0, 0}, {2, 5});
  Tensor w = check_returned_weights(*m, x, pad);
  Vec ref;
  mha_ref(
      *m, x, x, x, [&](int64_t b, int64_t i, int64_t j) { return j > i || padding_mask(pad)(b, i, j); }, &ref);
  check_close(w, ref, 1e-12, 1e-10);
}

TEST_CASE("\"fixed\" with head_dim = d/h is exactly \"softmax\" given the same weights") {
  auto s = make(config("softmax", 8, 2), kFloat32, 1);
  auto f = make(config("fixed", 8, 2, 4), kFloat32, 2);
  CHECK(s->num_parameters() == f->num_parameters());
  f->load_state_dict(s->state_dict());
  Tensor x = input({2, 5, 8}, 71, kFloat32);
  Tensor a = s->forward(x, kCausal), b = f->forward(x, kCausal);
  CHECK(a.to_vector<float>() == b.to_vector<float>());
  CHECK(s->type_name() == "MultiHeadAttention");
  CHECK(f->type_name() == "FixedHeadAttention");
}

TEST_CASE("parameter counts are 4·h·p·d + 3·h·p + d, h need not divide d for \"fixed\"") {
  auto s = make(config("softmax", 8, 2));
  CHECK(s->num_parameters() == 4 * 8 * 8 + 3 * 8 + 8);
  CHECK(nn::attention_cost(s->config, 16, false).params == s->num_parameters());
  // h = 3 does not divide d = 10; p = 4 so h·p = 12 != d.
  auto f = make(config("fixed", 10, 3, 4));
  CHECK(f->num_parameters() == 4 * 3 * 4 * 10 + 3 * 3 * 4 + 10);
  CHECK(nn::attention_cost(f->config, 16, true).params == f->num_parameters());
  Tensor x = input({2, 4, 10}, 81);
  Tensor y = f->forward(x, kCausal);
  CHECK(y.sizes() == Shape{2, 4, 10});
  check_close(y, mha_ref(*f, x, x, x, causal_mask()), 1e-12, 1e-10);
  // No biases: 4·h·p·d exactly.
  auto nb = config("fixed", 10, 3, 4);
  nb.bias = false;
  CHECK(make(nb)->num_parameters() == 4 * 3 * 4 * 10);
  CHECK(nn::attention_cost(nb, 16, false).params == 4 * 3 * 4 * 10);
  // Causal attention costs less per token than full attention; projections dominate short sequences.
  CHECK(nn::attention_cost(s->config, 64, true).flops_per_token <
        nn::attention_cost(s->config, 64, false).flops_per_token);
}

TEST_CASE("softmax attention config and input errors name the field") {
  using doctest::Contains;
  CHECK_THROWS_WITH_AS(nn::make_attention(config("bogus", 8, 2)), Contains("attention.type: unknown family 'bogus'"),
                       Error);
  CHECK_THROWS_WITH_AS(nn::make_attention(config("softmax", 10, 3)),
                       "attention.heads: 3 heads do not divide d_model 10; set attention.head_dim (the \"fixed\" "
                       "family allows any head size)",
                       Error);
  CHECK_THROWS_WITH_AS(nn::make_attention(config("softmax", 8, 2, 8)),
                       "attention.head_dim: the \"softmax\" family uses d_model / heads = 4; for head size 8 use type "
                       "\"fixed\"",
                       Error);
  CHECK_THROWS_WITH_AS(nn::make_attention(config("fixed", 8, 2)),
                       "attention.head_dim: the \"fixed\" family needs an explicit head_dim", Error);
  CHECK_THROWS_WITH_AS(nn::make_attention(config("softmax", 8, 0)), "attention.heads must be positive, got 0", Error);
  CHECK_THROWS_WITH_AS(nn::make_attention(config("fixed", 8, 2, -1)),
                       "attention.head_dim must be >= 0 (0 means d_model / heads), got -1", Error);
  auto c = config("softmax", 8, 2);
  c.with_options(nn::MgkOptions{});  // MGK's options on softmax (the config file names the key: test_config.cpp)
  CHECK_THROWS_WITH_AS(nn::make_attention(c), "attention 'softmax': its options are another family's", Error);
  c = config("softmax", 8, 2);
  c.dropout = 1;
  CHECK_THROWS_WITH_AS(nn::make_attention(c), "attention.dropout must be in [0, 1), got 1", Error);

  auto m = make(config("softmax", 8, 2));
  CHECK_THROWS_WITH_AS(m->forward(input({2, 5, 7}, 1)),
                       "softmax attention: query must be (B, T, 8), got float64 [2, 5, 7]", Error);
  CHECK_THROWS_WITH_AS(m->forward(input({2, 5, 8}, 1), input({3, 4, 8}, 2), input({3, 4, 8}, 3)),
                       "softmax attention: key must be (2, S, 8), got float64 [3, 4, 8]", Error);
  CHECK_THROWS_WITH_AS(m->forward(input({2, 5, 8}, 1), input({2, 4, 8}, 2), input({2, 3, 8}, 3)),
                       "softmax attention: value float64 [2, 3, 8] must match key float64 [2, 4, 8]", Error);
  CHECK_THROWS_WITH_AS(m->forward(input({2, 5, 8}, 1), {.key_padding = zeros({2, 5}, {.dtype = kInt64})}),
                       "softmax attention: key_padding must be bool (B, S) with B = 2, got int64 [2, 5]", Error);
  CHECK_THROWS_WITH_AS(m->forward(input({2, 5, 8}, 1), {.key_padding = zeros({2, 4}, {.dtype = kBool})}),
                       "softmax attention: key_padding covers 4 keys but there are 5", Error);
  // A growing cache takes the padding of the new keys only.
  nn::AttentionCache cache;
  m->forward(input({2, 2, 8}, 1), kCausal, &cache);
  CHECK_THROWS_WITH_AS(
      m->forward(input({2, 1, 8}, 1), {.causal = true, .key_padding = zeros({2, 3}, {.dtype = kBool})}, &cache),
      "softmax attention: key_padding covers 3 keys but there are 1 new keys (a growing cache takes "
      "the padding of the new keys only)",
      Error);
  // A cache filled for another batch size.
  CHECK_THROWS_WITH_AS(m->forward(input({3, 1, 8}, 1), kCausal, &cache),
                       "softmax attention: the cache holds batch size 2, got a query of batch size 3", Error);
}
