// tests/nn/test_linear_attention.cpp — the "linear" and "mlk" attention
// families: a loop reference written from the formulas (explicit sums over j
// and r, fed the module's own weights), float64 gradchecks of the whole module
// including its parameters, causal and padding masks, incremental decoding
// against full recomputation, attention weights, parameter counts and errors.
#include "support/testing.h"

#include <algorithm>

#include "nn/attention/linear_attention.h"

using namespace ks;
using namespace ks::nn;
using namespace ks::testing;
using V = const std::vector<Tensor>&;

namespace {

constexpr double kEps = LinearAttention::kEps;

AttentionConfig config(const std::string& type, int64_t keys = 3) {
  AttentionConfig c;
  c.type = type;
  c.d_model = 8;
  c.heads = 2;
  MlkOptions o;
  o.keys = keys;
  if (type == "mlk") c.with_options(o);
  return c;
}

// A float64 module; MLK's mixing logits are made non-uniform so π matters.
std::shared_ptr<LinearAttention> build(const AttentionConfig& cfg, uint64_t seed = 1) {
  auto m = std::dynamic_pointer_cast<LinearAttention>(make_attention(cfg));
  REQUIRE(m);
  m->to(kFloat64);
  if (m->pi_logits.defined()) {
    Generator g(seed);
    normal_(m->pi_logits, 0, 1, &g);
  }
  return m;
}

Tensor input64(const Shape& s, uint64_t seed) { return detach(leaf64(s, seed)); }

std::vector<double> values(const Tensor& t) { return t.defined() ? t.to_vector<double>() : std::vector<double>(); }

// y (rows, out) = x (rows, in) Wᵀ + b, by loops.
std::vector<double> project(const std::vector<double>& x, int64_t rows, int64_t in, const Linear& lin) {
  const std::vector<double> W = values(lin.weight), b = values(lin.bias);
  const int64_t out = lin.out_features;
  std::vector<double> y(size_t(rows * out));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < out; ++o) {
      double s = b.empty() ? 0.0 : b[size_t(o)];
      for (int64_t i = 0; i < in; ++i) s += x[size_t(r * in + i)] * W[size_t(o * in + i)];
      y[size_t(r * out + o)] = s;
    }
  return y;
}

double phi(double x) { return x > 0 ? x + 1 : std::exp(x); }  // elu(x) + 1

struct Reference {
  std::vector<double> out;      // (B, T, d)
  std::vector<double> weights;  // (B, h, T, S)
};

// out_i = φ(q_i)ᵀ Σ_j Σ_r π_r φ(k_jr) v_jᵀ / (φ(q_i)ᵀ Σ_j Σ_r π_r φ(k_jr) + ε) per head, over
// the keys j that query i may see, then the output projection.
Reference reference(const LinearAttention& m, const Tensor& query, const Tensor& key, const Tensor& value,
                    bool causal = false, const Tensor& key_padding = Tensor()) {
  const int64_t B = query.size(0), T = query.size(1), S = key.size(1), D = m.config.d_model;
  const int64_t kv = key.size(2), H = m.config.heads, P = m.config.resolved_head_dim(), M = m.num_keys;
  const std::vector<double> Q = project(values(query), B * T, D, *m.q);
  const std::vector<double> K = project(values(key), B * S, kv, *m.k);  // (B, S, M, h, p)
  const std::vector<double> Vv = project(values(value), B * S, kv, *m.v);
  const std::vector<double> logits = values(m.pi_logits);
  std::vector<double> pi(size_t(H * M), 1.0);
  if (!logits.empty())
    for (int64_t h = 0; h < H; ++h) {
      double z = 0;
      for (int64_t r = 0; r < M; ++r) z += std::exp(logits[size_t(h * M + r)]);
      for (int64_t r = 0; r < M; ++r) pi[size_t(h * M + r)] = std::exp(logits[size_t(h * M + r)]) / z;
    }
  const std::vector<bool> pad = [&] {
    std::vector<bool> p(size_t(B * S), false);
    if (key_padding.defined()) {
      std::vector<double> v = values(key_padding);
      for (size_t i = 0; i < v.size(); ++i) p[i] = v[i] != 0;
    }
    return p;
  }();
  Reference ref;
  std::vector<double> merged(size_t(B * T * H * P));
  ref.weights.assign(size_t(B * H * T * S), 0.0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < T; ++i) {
        std::vector<double> num(size_t(P), 0.0), score(size_t(S), 0.0);
        double den = 0;
        for (int64_t j = 0; j < S; ++j) {
          if (pad[size_t(b * S + j)] || (causal && j > i)) continue;
          double s = 0;  // φ(q_i)ᵀ Σ_r π_r φ(k_jr)
          for (int64_t a = 0; a < P; ++a) {
            double fk = 0;
            for (int64_t r = 0; r < M; ++r)
              fk += pi[size_t(h * M + r)] * phi(K[size_t(((b * S + j) * M + r) * H * P + h * P + a)]);
            s += phi(Q[size_t((b * T + i) * H * P + h * P + a)]) * fk;
          }
          score[size_t(j)] = s;
          den += s;
          for (int64_t c = 0; c < P; ++c) num[size_t(c)] += s * Vv[size_t((b * S + j) * H * P + h * P + c)];
        }
        for (int64_t c = 0; c < P; ++c) merged[size_t((b * T + i) * H * P + h * P + c)] = num[size_t(c)] / (den + kEps);
        for (int64_t j = 0; j < S; ++j)
          ref.weights[size_t(((b * H + h) * T + i) * S + j)] = score[size_t(j)] / (den + kEps);
      }
  ref.out = project(merged, B * T, H * P, *m.o);
  return ref;
}

Tensor padding(std::initializer_list<double> v, int64_t B, int64_t S) {
  return ne(tensor(v, {B, S}), 0.0);  // bool (B, S)
}

const std::vector<std::string> kTypes = {"linear", "mlk"};

}  // namespace

TEST_CASE("linear attention and MLK match explicit sums over j and r") {
  for (const std::string& type : kTypes) {
    CAPTURE(type);
    auto m = build(config(type));
    Tensor x = input64({2, 5, 8}, 2);
    Tensor pad = padding({0, 0, 1, 0, 0, /**/ 1, 0, 0, 0, 1}, 2, 5);
    check_close(m->forward(x), reference(*m, x, x, x).out, 1e-12, 1e-10);
    check_close(m->forward(x, {true, Tensor()}), reference(*m, x, x, x, true).out, 1e-12, 1e-10);
    check_close(m->forward(x, {false, pad}), reference(*m, x, x, x, false, pad).out, 1e-12, 1e-10);
    check_close(m->forward(x, {true, pad}), reference(*m, x, x, x, true, pad).out, 1e-12, 1e-10);
    // Cross-attention: key/value width 6, 4 keys; a fixed head size, no biases.
    AttentionConfig c = config(type);
    c.kv_dim = 6;
    c.head_dim = 3;
    c.bias = false;
    auto cross = build(c, 3);
    Tensor mem = input64({2, 4, 6}, 4), val = input64({2, 4, 6}, 5);
    Tensor mpad = padding({0, 1, 0, 0, /**/ 0, 0, 0, 1}, 2, 4);
    check_close(cross->forward(x, mem, val, {false, mpad}), reference(*cross, x, mem, val, false, mpad).out, 1e-12,
                1e-10);
  }
}

TEST_CASE("MLK: π starts uniform, and one key per position is plain linear attention") {
  auto mlk = build(config("mlk", 1));
  auto lin = build(config("linear"), 2);
  lin->load_state_dict(mlk->state_dict(), /*strict=*/false);  // all but pi_logits
  Tensor x = input64({2, 5, 8}, 6);
  check_close(mlk->forward(x, {true, Tensor()}), lin->forward(x, {true, Tensor()}), 1e-12, 1e-10);
  auto fresh = std::dynamic_pointer_cast<LinearAttention>(make_attention(config("mlk", 4)));
  check_close(fresh->mixture(), std::vector<double>(8, 0.25));
  CHECK(fresh->pi_logits.sizes() == Shape{2, 4});
  CHECK_FALSE(lin->mixture().defined());
}

TEST_CASE("linear attention and MLK gradcheck in float64, parameters included") {
  for (const std::string& type : kTypes) {
    for (bool causal : {false, true}) {
      CAPTURE(type);
      CAPTURE(causal);
      AttentionConfig c = config(type, 2);
      c.d_model = 4;
      auto m = build(c);
      Tensor x = leaf64({2, 3, 4}, 7);
      Tensor pad = padding({0, 0, 1, /**/ 0, 0, 0}, 2, 3);
      std::vector<Tensor> inputs = {x};
      for (const Tensor& p : m->parameters()) inputs.push_back(p);  // f reads them through the module
      CHECK_GRADCHECK([&](V t) { return m->forward(t[0], {causal, pad}); }, inputs);
    }
    // Cross-attention, with the key and value inputs as leaves.
    AttentionConfig c = config(type, 2);
    c.d_model = 4;
    c.kv_dim = 3;
    auto m = build(c, 8);
    Tensor q = leaf64({2, 2, 4}, 9), k = leaf64({2, 3, 3}, 10), v = leaf64({2, 3, 3}, 11);
    CHECK_GRADCHECK([&](V t) { return m->forward(t[0], t[1], t[2]); }, {q, k, v});
  }
}

TEST_CASE("causal linear attention never looks ahead") {
  for (const std::string& type : kTypes) {
    CAPTURE(type);
    auto m = build(config(type));
    Tensor x = input64({2, 6, 8}, 12);
    Tensor changed = clone(x);
    copy_(narrow(changed, 1, 3, 3), input64({2, 3, 8}, 13));  // new tokens 3..5
    Tensor a = m->forward(x, {true, Tensor()}), b = m->forward(changed, {true, Tensor()});
    check_close(narrow(b, 1, 0, 3), narrow(a, 1, 0, 3), 1e-13, 0);
    CHECK(max(abs(sub(narrow(b, 1, 3, 3), narrow(a, 1, 3, 3)))).item() > 1e-3);  // the test can see a change
    // The gradient of an early output with respect to later inputs is exactly zero.
    Tensor xl = leaf64({2, 6, 8}, 14);
    backward(sum(narrow(m->forward(xl, {true, Tensor()}), 1, 0, 2)));
    check_close(narrow(xl.grad(), 1, 2, 4), std::vector<double>(2 * 4 * 8, 0.0), 0, 0);
  }
}

TEST_CASE("padded keys change nothing, and a query with every key padded gets 0 from the heads") {
  for (const std::string& type : kTypes) {
    for (bool causal : {false, true}) {
      CAPTURE(type);
      CAPTURE(causal);
      auto m = build(config(type));
      Tensor x = input64({2, 5, 8}, 15);
      Tensor pad = padding({0, 1, 0, 0, 1, /**/ 0, 0, 0, 1, 0}, 2, 5);
      Tensor changed = clone(x);
      copy_(narrow(narrow(changed, 0, 0, 1), 1, 1, 1), input64({1, 1, 8}, 16));
      copy_(narrow(narrow(changed, 0, 0, 1), 1, 4, 1), input64({1, 1, 8}, 17));
      copy_(narrow(narrow(changed, 0, 1, 1), 1, 3, 1), input64({1, 1, 8}, 18));
      Tensor a = m->forward(x, {causal, pad}), b = m->forward(changed, {causal, pad});
      // Rows of the padded positions themselves change (their queries did); no other row does.
      for (auto [bi, t] :
           std::vector<std::pair<int64_t, int64_t>>{{0, 0}, {0, 2}, {0, 3}, {1, 0}, {1, 1}, {1, 2}, {1, 4}})
        check_close(select(select(b, 0, bi), 0, t), select(select(a, 0, bi), 0, t), 1e-13, 0);
    }
    // Batch row 1 has no visible key: its heads give 0, so the output is o's bias.
    auto m = build(config(type));
    Tensor x = input64({2, 3, 8}, 19);
    Tensor out = m->forward(x, {false, padding({0, 1, 0, /**/ 1, 1, 1}, 2, 3)});
    for (int64_t t = 0; t < 3; ++t) check_close(select(select(out, 0, 1), 0, t), m->o->bias, 1e-15, 0);
    // Causal: query 0 sees only key 0, which is padded.
    Tensor first = m->forward(x, {true, padding({1, 0, 0, /**/ 0, 0, 0}, 2, 3)});
    check_close(select(select(first, 0, 0), 0, 0), m->o->bias, 1e-15, 0);
  }
}

TEST_CASE("cached decoding, one token or a few at a time, equals full recomputation") {
  for (const std::string& type : kTypes) {
    CAPTURE(type);
    auto m = build(config(type));
    Tensor x = input64({2, 6, 8}, 20);
    Tensor pad = padding({0, 0, 1, 0, 0, 0, /**/ 1, 0, 0, 0, 1, 0}, 2, 6);
    Tensor full = m->forward(x, {true, pad});
    for (int64_t chunk : {1, 2, 4}) {
      CAPTURE(chunk);
      AttentionCache cache;
      std::vector<Tensor> steps;
      for (int64_t t = 0; t < 6; t += chunk) {
        const int64_t n = std::min<int64_t>(chunk, 6 - t);
        NoGradGuard no_grad;
        steps.push_back(m->forward(narrow(x, 1, t, n), {true, narrow(pad, 1, t, n)}, &cache));
        CHECK(cache.length == t + n);
      }
      check_close(cat(steps, 1), full, 1e-12, 1e-10);
      CHECK(cache.state.sizes() == Shape{2, 2, 4, 4});
      CHECK(cache.norm.sizes() == Shape{2, 2, 4});
    }
    // Non-causal self-attention with a cache: new queries see every key so far.
    AttentionCache cache;
    m->forward(narrow(x, 1, 0, 4), {}, &cache);
    Tensor last = m->forward(narrow(x, 1, 4, 2), {}, &cache);
    check_close(last, m->forward(narrow(x, 1, 4, 2), x, x), 1e-12, 1e-10);
  }
}

TEST_CASE("cross-attention with a static cache forms the memory's sums once") {
  for (const std::string& type : kTypes) {
    CAPTURE(type);
    AttentionConfig c = config(type);
    c.kv_dim = 6;
    auto m = build(c);
    Tensor y = input64({2, 3, 8}, 21), mem = input64({2, 4, 6}, 22);
    Tensor mpad = padding({0, 0, 0, 1, /**/ 0, 1, 0, 0}, 2, 4);
    AttentionCache cache;
    cache.is_static = true;
    Tensor first = m->forward(narrow(y, 1, 0, 1), mem, mem, {false, mpad}, &cache);
    CHECK(cache.length == 4);
    Tensor state = cache.state;
    // Later calls read the sums: memory may be passed again or left out.
    Tensor second = m->forward(narrow(y, 1, 1, 1), mem, mem, {false, mpad}, &cache);
    Tensor third = m->forward(narrow(y, 1, 2, 1), Tensor(), Tensor(), {}, &cache);
    CHECK(cache.state.is_same(state));
    CHECK(cache.length == 4);
    check_close(cat({first, second, third}, 1), m->forward(y, mem, mem, {false, mpad}), 1e-12, 1e-10);
  }
}

TEST_CASE("return_weights gives the normalised, masked φ(q)ᵀφ(k) matrix") {
  for (const std::string& type : kTypes) {
    for (bool causal : {false, true}) {
      CAPTURE(type);
      CAPTURE(causal);
      auto m = build(config(type));
      m->return_weights = true;
      Tensor x = input64({2, 4, 8}, 23);
      Tensor pad = padding({0, 1, 0, 0, /**/ 0, 0, 0, 1}, 2, 4);
      Tensor out = m->forward(x, {causal, pad});
      Reference ref = reference(*m, x, x, x, causal, pad);
      REQUIRE(m->record().weights.defined());
      CHECK(m->record().weights.sizes() == Shape{2, 2, 4, 4});
      CHECK_FALSE(m->record().weights.requires_grad());
      check_close(m->record().weights, ref.weights, 1e-12, 1e-10);
      // A V through the output projection is the layer's output.
      Tensor vh = masked_fill(transpose(view(m->v->forward(x), {2, 4, 2, 4}), 1, 2), view(pad, {2, 1, 4, 1}), 0.0);
      Tensor via_weights = m->o->forward(reshape(transpose(matmul(m->record().weights, vh), 1, 2), {2, 4, 8}));
      check_close(via_weights, out, 1e-12, 1e-10);
    }
  }
}

TEST_CASE("parameter counts and costs of the linear family") {
  // d = 8, h = 2, p = 4 (h·p = 8): each projection 8·8 weights + 8 biases.
  CHECK(make_attention(config("linear"))->num_parameters() == 4 * (64 + 8));
  // MLK, M = 3: the key projection is 8 → 24, plus 2·3 mixing logits.
  CHECK(make_attention(config("mlk", 3))->num_parameters() == 3 * (64 + 8) + (8 * 24 + 24) + 6);
  for (const std::string& type : kTypes)
    for (int64_t keys : {1, 2, 3})
      for (bool bias : {true, false})
        for (int64_t kv : {0, 6}) {
          AttentionConfig c = config(type, keys);
          c.bias = bias;
          c.kv_dim = kv;
          c.head_dim = 3;
          CAPTURE(type);
          CAPTURE(keys);
          CAPTURE(bias);
          CAPTURE(kv);
          CHECK(attention_cost(c, 16, false).params == make_attention(c)->num_parameters());
        }
  // The cost per token does not grow with the length, causal or not; softmax's does.
  AttentionConfig lin = config("linear"), mlk = config("mlk", 2), sm = config("softmax");
  CHECK(attention_cost(lin, 16, false).flops_per_token == attention_cost(lin, 4096, true).flops_per_token);
  CHECK(attention_cost(mlk, 16, false).flops_per_token == attention_cost(mlk, 4096, false).flops_per_token);
  CHECK(attention_cost(mlk, 64, false).flops_per_token > attention_cost(lin, 64, false).flops_per_token);
  CHECK(attention_cost(sm, 4096, false).flops_per_token > attention_cost(lin, 4096, false).flops_per_token);
  // Projections 2·4·64 + the sums 2·2·(2·4·4 + 8) per token, by hand.
  CHECK(attention_cost(lin, 100, true).flops_per_token == doctest::Approx(2.0 * 4 * 64 + 2.0 * 2 * (32 + 8)));
}

TEST_CASE("the linear family ignores attention dropout") {
  for (const std::string& type : kTypes) {
    AttentionConfig c = config(type);
    c.dropout = 0.5;
    auto m = build(c);
    m->train();
    Tensor x = input64({2, 4, 8}, 24);
    check_close(m->forward(x), reference(*m, x, x, x).out, 1e-12, 1e-10);
  }
  std::vector<std::string> families = attention_families();
  CHECK(std::count(families.begin(), families.end(), "linear") == 1);
  CHECK(std::count(families.begin(), families.end(), "mlk") == 1);
  CHECK(make_attention(config("mlk"))->type_name() == "MixtureLinearAttention");
  CHECK(make_attention(config("linear"))->type_name() == "LinearAttention");
}

TEST_CASE("linear attention reports bad shapes, configs and cache use") {
  auto m = build(config("linear"));
  Tensor x = input64({2, 5, 8}, 25);
  CHECK_THROWS_WITH_AS(m->forward(input64({2, 5, 7}, 26)),
                       "linear attention: query must be (B, T, 8), got float64 [2, 5, 7]", Error);
  CHECK_THROWS_WITH_AS(m->forward(x, narrow(x, 1, 0, 4), narrow(x, 1, 0, 4), {true, Tensor()}),
                       "linear attention: causal attention needs one new key per query, got 5 queries and 4 keys",
                       Error);
  CHECK_THROWS_WITH_AS(m->forward(x, {false, padding({0, 0, 0, 0, 0, 0, 0, 0}, 2, 4)}),
                       "linear attention: key_padding covers 4 keys but there are 5", Error);
  AttentionCache cache;
  m->forward(narrow(x, 1, 0, 2), {true, Tensor()}, &cache);
  CHECK_THROWS_WITH_AS(m->forward(narrow(x, 1, 2, 1), {true, padding({0, 0, 0, 0}, 2, 2)}, &cache),
                       "linear attention: key_padding covers 2 keys but there are 1 new keys (a growing cache takes "
                       "the padding of the new keys only)",
                       Error);
  m->return_weights = true;
  CHECK_THROWS_WITH_AS(m->forward(narrow(x, 1, 2, 1), {true, Tensor()}, &cache),
                       "linear attention: return_weights needs the keys, but the cache keeps only their sums (2 keys "
                       "so far); compute weights without a cache",
                       Error);
  m->return_weights = false;
  AttentionCache cross;
  cross.is_static = true;
  CHECK_THROWS_WITH_AS(m->forward(x, x, x, {true, Tensor()}, &cross),
                       "linear attention: causal masking cannot use a static (cross-attention) cache", Error);
  AttentionCache foreign;  // as the softmax family leaves it: keys, no sums
  foreign.k = zeros({2, 2, 3, 4}, {.dtype = kFloat64});
  foreign.length = 3;
  CHECK_THROWS_WITH_AS(m->forward(narrow(x, 1, 0, 1), {true, Tensor()}, &foreign),
                       doctest::Contains("linear attention: the cache must hold state (2, 2, 4, 4) and norm (2, 2, 4) "
                                         "sums, got state undefined"),
                       Error);
  CHECK_THROWS_WITH_AS(m->forward(to(x, kFloat32)), doctest::Contains("linear"), Error);
  AttentionConfig bad = config("mlk");
  bad.type = "linear";  // mlk's options on another family
  CHECK_THROWS_WITH_AS(make_attention(bad), "attention 'linear': its options are another family's", Error);
  bad = config("mlk", 0);
  CHECK_THROWS_WITH_AS(make_attention(bad), "attention.keys must be >= 1, got 0", Error);
  bad = config("mlk");
  bad.heads = 3;
  CHECK_THROWS_WITH_AS(make_attention(bad), doctest::Contains("3 heads do not divide d_model 8"), Error);
}
