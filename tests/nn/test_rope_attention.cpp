// tests/nn/test_rope_attention.cpp — rotary embeddings inside the attention
// families (AttentionConfig::rope_theta): softmax/fixed against a float64 loop
// reference of rotated attention, cached decoding equal to full recomputation
// at several offsets for every family that takes rope, left padding that
// leaves the real tokens' outputs unchanged (positions are slot indices and
// scores depend on distances only), cross-attention without rope, and the
// named errors (linear/mlk, odd head size).
#include <cmath>
#include <numeric>

#include "nn/attention/mgk_attention.h"
#include "nn/attention/softmax_attention.h"
#include "nn/attention_reference.h"
#include "nn/transformer.h"

using namespace ks;
using namespace ks::testing;

namespace {

nn::AttentionConfig config(const std::string& type, int64_t d, int64_t h, int64_t p = 0, double theta = 100) {
  nn::AttentionConfig c;
  c.type = type;
  c.d_model = d;
  c.heads = h;
  c.head_dim = p;
  c.rope_theta = theta;
  return c;
}

// v (p) turned as position pos: pairs (i, i + p/2) by pos · θ^(-2i/p).
void rotate_ref(double* v, int64_t p, double pos, double theta) {
  for (int64_t i = 0; i < p / 2; ++i) {
    const double a = pos * std::pow(theta, -2.0 * double(i) / double(p));
    const double x1 = v[i], x2 = v[i + p / 2];
    v[i] = x1 * std::cos(a) - x2 * std::sin(a);
    v[i + p / 2] = x2 * std::cos(a) + x1 * std::sin(a);
  }
}

// softmax((R_i q_i)·(R_j k_j)/√p + mask) V per head, then W_o, by loops.
Vec rotated_mha_ref(const nn::MultiHeadAttention& m, const Tensor& x, const MaskFn& masked) {
  const int64_t B = x.size(0), T = x.size(1);
  const int64_t h = m.config.heads, p = m.config.resolved_head_dim(), hp = h * p;
  Vec Q = linear_ref(x.to_vector<double>(), B * T, *m.q);
  Vec K = linear_ref(x.to_vector<double>(), B * T, *m.k);
  const Vec Vv = linear_ref(x.to_vector<double>(), B * T, *m.v);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t hd = 0; hd < h; ++hd) {
        rotate_ref(&Q[size_t((b * T + t) * hp + hd * p)], p, double(t), m.config.rope_theta);
        rotate_ref(&K[size_t((b * T + t) * hp + hd * p)], p, double(t), m.config.rope_theta);
      }
  // Element c of head hd at (b, t) of a projection laid out (B, T, h·p).
  auto at = [&](int64_t b, int64_t t, int64_t hd) { return size_t((b * T + t) * hp + hd * p); };
  Vec heads(size_t(B * T * hp), 0.0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t hd = 0; hd < h; ++hd)
      for (int64_t i = 0; i < T; ++i) {
        Vec w(static_cast<size_t>(T));
        std::vector<bool> hidden(static_cast<size_t>(T));
        for (int64_t j = 0; j < T; ++j) {
          const double* qi = &Q[at(b, i, hd)];
          w[size_t(j)] = std::inner_product(qi, qi + p, &K[at(b, j, hd)], 0.0) / std::sqrt(double(p));
          hidden[size_t(j)] = masked(b, i, j);
        }
        masked_softmax_ref(w, hidden);
        for (int64_t j = 0; j < T; ++j)
          for (int64_t c = 0; c < p; ++c)
            heads[at(b, i, hd) + size_t(c)] += w[size_t(j)] * Vv[at(b, j, hd) + size_t(c)];
      }
  return linear_ref(heads, B * T, *m.o);
}

std::shared_ptr<nn::Attention> seeded(const nn::AttentionConfig& c, uint64_t seed = 7) {
  manual_seed(seed);
  auto m = nn::make_attention(c);
  m->to(kFloat64);
  return m;
}

// The families that take rope, each at a small config with an even head size.
std::vector<nn::AttentionConfig> rope_families() {
  return {config("softmax", 8, 2), config("fixed", 8, 3, 4), config("mgk", 8, 2), config("smgk", 8, 2)};
}

}  // namespace

TEST_CASE("rope: softmax and fixed attention match a float64 loop reference of rotated attention") {
  for (const nn::AttentionConfig& c : {config("softmax", 8, 2), config("fixed", 6, 3, 4, 10000)}) {
    CAPTURE(c.type);
    auto m = seeded_attention<nn::MultiHeadAttention>(c, kFloat64, 3);
    Tensor x = input({2, 5, c.d_model}, 21);
    Tensor pad = bool_tensor({0, 0, 0, 1, 0, 0, 1, 0, 0, 0}, {2, 5});
    check_close(m->forward(x), rotated_mha_ref(*m, x, no_mask()), 1e-12, 1e-10);
    const MaskFn causal = causal_mask(), padded = padding_mask(pad);
    check_close(
        m->forward(x, {.causal = true, .key_padding = pad}),
        rotated_mha_ref(*m, x, [&](int64_t b, int64_t i, int64_t j) { return causal(b, i, j) || padded(b, i, j); }),
        1e-12, 1e-10);
    // The reference is not the unrotated one: rope changes the output.
    nn::AttentionConfig plain = c;
    plain.rope_theta = 0;
    auto unrotated = seeded_attention<nn::MultiHeadAttention>(plain, kFloat64, 3);
    CHECK(max(abs(sub(unrotated->forward(x), m->forward(x)))).item() > 1e-3);
    // The fused path and the return_weights path rotate alike.
    m->return_weights = true;
    check_close(m->forward(x, {.causal = true, .key_padding = Tensor()}), rotated_mha_ref(*m, x, causal), 1e-12, 1e-10);
  }
}

TEST_CASE("rope: cached decoding equals full recomputation at several offsets, every family that takes it") {
  for (const nn::AttentionConfig& c : rope_families()) {
    CAPTURE(c.type);
    auto m = seeded(c);
    Tensor x = input({2, 9, 8}, 41);
    Tensor full = m->forward(x, {.causal = true, .key_padding = Tensor()});
    // Prefills of 1, 3 and 5 tokens, then chunks of 1 and 2: offsets 1 .. 8.
    for (int64_t prefill : {1, 3, 5}) {
      CAPTURE(prefill);
      nn::AttentionCache cache;
      std::vector<Tensor> parts{
          m->forward(narrow(x, 1, 0, prefill), {.causal = true, .key_padding = Tensor()}, &cache)};
      for (int64_t t = prefill; t < 9;) {
        const int64_t n = std::min<int64_t>(t % 2 == 0 ? 2 : 1, 9 - t);
        parts.push_back(m->forward(narrow(x, 1, t, n), {.causal = true, .key_padding = Tensor()}, &cache));
        t += n;
      }
      check_close(cat(parts, 1), full, 1e-12, 1e-10);
      CHECK(cache.length == 9);
    }
  }
}

TEST_CASE("rope: left padding leaves the real tokens' outputs as without it (positions are slots, scores relative)") {
  for (const nn::AttentionConfig& c : rope_families()) {
    CAPTURE(c.type);
    auto m = seeded(c);
    Tensor x = input({1, 5, 8}, 51);
    Tensor alone = m->forward(x, {.causal = true, .key_padding = Tensor()});
    // Three pads in front, masked as keys: the real tokens sit at slots 3 .. 7.
    Tensor padded = cat({input({1, 3, 8}, 52), x}, 1);
    Tensor pad = bool_tensor({1, 1, 1, 0, 0, 0, 0, 0}, {1, 8});
    Tensor out = m->forward(padded, {.causal = true, .key_padding = pad});
    check_close(narrow(out, 1, 3, 5), alone, 1e-12, 1e-10);
  }
}

TEST_CASE("rope: a decoder layer's cross-attention takes no rope, its self-attention does") {
  nn::LayerConfig l;
  l.d_model = 8;
  l.d_ff = 16;
  l.attention = config("softmax", 8, 2, 0, 500);
  nn::DecoderLayer layer(l, /*cross_attention=*/true);
  CHECK(layer.self_attn->config.rope_theta == 500);
  CHECK(layer.cross_attn->config.rope_theta == 0);
}

TEST_CASE("rope: linear and mlk refuse it by name, and an odd head size is refused") {
  for (const char* type : {"linear", "mlk"})
    CHECK_THROWS_WITH_AS(
        nn::make_attention(config(type, 8, 2)),
        doctest::Contains(
            str("attention.rope_theta: the \"", type, "\" family does not take rotary embeddings").c_str()),
        Error);
  CHECK_THROWS_WITH_AS(nn::make_attention(config("fixed", 8, 2, 3)),
                       doctest::Contains("attention.rope_theta: rotary embeddings pair dimension i with i + p/2, so "
                                         "the head size must be even, got 3"),
                       Error);
  CHECK_THROWS_WITH_AS(nn::make_attention(config("softmax", 8, 2, 0, -1)),
                       doctest::Contains("attention.rope_theta must be >= 0"), Error);
}
