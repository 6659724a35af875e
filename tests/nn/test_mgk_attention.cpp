// tests/nn/test_mgk_attention.cpp — the "mgk" and "smgk" families and their
// hard-E and soft-E variants: a loop reference with the full Gaussian mixture
// formula (‖q − k_jr‖² in full, log-sum-exp or max over r), float64 gradchecks
// of the whole module, causal and padding masks, cached decoding (growing and
// static caches), returned weights, M = 1 as plain Gaussian-kernel attention,
// the soft-E update of π, the fused path against the composed return_weights
// path (outputs, gradients, π, dropout), parameter counts and state-dict names,
// config errors.
#include <cmath>
#include <type_traits>

#include "nn/attention/mgk_attention.h"
#include "nn/attention_reference.h"

using namespace ks;
using namespace ks::testing;

namespace {

using V = const std::vector<Tensor>&;
const nn::AttentionMask kCausal{true, Tensor()};

struct Variant {
  const char* type;
  bool hard_e = false, soft_e = false;
  bool sigma_per_key = false;  // σ_r² = {√p, √p/3, ...}: the official language model's second key
  bool fixed_pi = false;       // learn_pi false: no π (the official hard-E)
};
const std::vector<Variant> kVariants = {{"mgk"},
                                        {"smgk"},
                                        {"mgk", true, false},
                                        {"smgk", true, false},
                                        {"mgk", false, true},
                                        {"smgk", false, true},
                                        {"mgk", false, false, true},
                                        {"smgk", false, true, true},
                                        {"mgk", true, false, false, true},
                                        {"smgk", false, false, true, true}};
std::string variant_name(const Variant& v) {
  return std::string(v.type) + (v.hard_e ? " hard_e" : "") + (v.soft_e ? " soft_e" : "") +
         (v.sigma_per_key ? " sigma2_keys" : "") + (v.fixed_pi ? " fixed pi" : "");
}

nn::AttentionConfig config(const Variant& var, int64_t d, int64_t h, int64_t M = 2, int64_t p = 0, int64_t kv = 0) {
  nn::AttentionConfig c;
  c.type = var.type;
  c.d_model = d;
  c.heads = h;
  c.head_dim = p;
  c.kv_dim = kv;
  nn::SmgkOptions o;
  o.keys = M;
  o.hard_e = var.hard_e;
  o.soft_e = var.soft_e;
  o.learn_pi = !var.fixed_pi;
  if (var.sigma_per_key) {
    const double base = std::sqrt(double(p > 0 ? p : d / h));
    for (int64_t r = 0; r < M; ++r) o.sigma2_keys.push_back(base / (r == 0 ? 1.0 : 3.0 * double(r)));
  }
  if (c.type == "smgk")
    c.with_options(o);
  else
    c.with_options(nn::MgkOptions(o));
  return c;
}

// c with its MGK options changed by edit(options) (SmgkOptions& for smgk).
template <class Options = nn::MgkOptions, class F> nn::AttentionConfig edited(nn::AttentionConfig c, F edit) {
  if (c.type == "smgk") {
    nn::SmgkOptions o = c.options_as<nn::SmgkOptions>();
    edit(o);
    return c.with_options(o);
  }
  if constexpr (std::is_same_v<Options, nn::MgkOptions>) {
    nn::MgkOptions o = c.options_as<nn::MgkOptions>();
    edit(o);
    c.with_options(o);
  }
  return c;
}

// A module in float64 whose π is not uniform (so the tests see it matter).
std::shared_ptr<nn::MixtureKeyAttention> make(const nn::AttentionConfig& c, DType dt = kFloat64, uint64_t seed = 7) {
  auto m = seeded_attention<nn::MixtureKeyAttention>(c, dt, seed);
  NoGradGuard no_grad;
  Generator g(seed + 100);
  if (m->pi_logits.defined()) copy_(m->pi_logits, randn(m->pi_logits.sizes(), {.dtype = dt}, &g));
  if (m->pi.defined()) {
    Tensor w = add(rand(m->pi.sizes(), {.dtype = dt}, &g), 0.2);
    copy_(m->pi, div(w, sum(w, {1}, true)));
  }
  if (m->mu.defined()) copy_(m->mu, mul(randn(m->mu.sizes(), {.dtype = dt}, &g), 0.5));  // well-separated shifts
  return m;
}

MaskFn either(MaskFn a, MaskFn b) {
  return [a, b](int64_t n, int64_t i, int64_t j) { return a(n, i, j) || b(n, i, j); };
}

struct MgkRef {
  Vec out;         // (B, T, d)
  Vec weights;     // (B, h, T, S)
  Vec mean_gamma;  // (h, M): responsibilities averaged over batch, queries and visible keys
};

// Nguyen et al., by loops: A_ij ∝ Σ_r π_r exp(−‖q_i − k_jr‖² / 2σ²) (hard-E:
// max_r), normalised over visible j, per head; the full distance, ‖q_i‖² included.
MgkRef mgk_ref(const nn::MixtureKeyAttention& m, const Tensor& query, const Tensor& key, const Tensor& value,
               const MaskFn& masked) {
  const nn::AttentionConfig& c = m.config;
  const nn::MgkOptions& o = m.options;
  const bool smgk = m.shifted;
  const int64_t B = query.size(0), T = query.size(1), S = key.size(1);
  const int64_t h = c.heads, p = c.resolved_head_dim(), M = o.keys, hp = h * p;
  auto sigma2_of = [&](int64_t r) {
    if (!o.sigma2_keys.empty()) return o.sigma2_keys[size_t(r)];
    return o.sigma2 > 0 ? o.sigma2 : std::sqrt(double(p));
  };
  const Vec Q = linear_ref(query.to_vector<double>(), B * T, *m.q);
  const Vec K = linear_ref(key.to_vector<double>(), B * S, *m.k);  // (B, S, M·h·p) or (B, S, h·p)
  const Vec Vv = linear_ref(value.to_vector<double>(), B * S, *m.v);
  const Vec mu = smgk ? m.mu.to_vector<double>() : Vec();
  Vec pi(static_cast<size_t>(h * M));
  if (o.soft_e) {
    pi = m.pi.to_vector<double>();
  } else if (!o.learn_pi) {
    std::fill(pi.begin(), pi.end(), 1.0 / double(M));
  } else {
    const Vec logits = m.pi_logits.to_vector<double>();
    for (int64_t hd = 0; hd < h; ++hd) {
      double z = 0;
      for (int64_t r = 0; r < M; ++r) z += std::exp(logits[size_t(hd * M + r)]);
      for (int64_t r = 0; r < M; ++r) pi[size_t(hd * M + r)] = std::exp(logits[size_t(hd * M + r)]) / z;
    }
  }
  auto k_at = [&](int64_t b, int64_t j, int64_t hd, int64_t r, int64_t ch) {
    if (smgk) return K[size_t((b * S + j) * hp + hd * p + ch)] - mu[size_t((hd * M + r) * p + ch)];
    return K[size_t((b * S + j) * M * hp + r * hp + hd * p + ch)];
  };
  MgkRef out;
  out.weights.assign(size_t(B * h * T * S), 0.0);
  out.mean_gamma.assign(size_t(h * M), 0.0);
  Vec heads(size_t(B * T * hp), 0.0);
  std::vector<double> visible(size_t(h), 0.0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t hd = 0; hd < h; ++hd)
      for (int64_t i = 0; i < T; ++i) {
        Vec ell(static_cast<size_t>(S));
        std::vector<bool> mask(static_cast<size_t>(S));
        for (int64_t j = 0; j < S; ++j) {
          Vec logit(static_cast<size_t>(M));
          double best = -INFINITY, z = 0;
          for (int64_t r = 0; r < M; ++r) {
            double dist = 0;
            for (int64_t ch = 0; ch < p; ++ch) {
              const double diff = Q[size_t((b * T + i) * hp + hd * p + ch)] - k_at(b, j, hd, r, ch);
              dist += diff * diff;
            }
            logit[size_t(r)] = std::log(pi[size_t(hd * M + r)]) - dist / (2 * sigma2_of(r));
            best = std::max(best, logit[size_t(r)]);
          }
          for (int64_t r = 0; r < M; ++r) z += std::exp(logit[size_t(r)] - best);
          ell[size_t(j)] = o.hard_e ? best : best + std::log(z);
          mask[size_t(j)] = masked(b, i, j);
          if (!mask[size_t(j)]) {
            visible[size_t(hd)] += 1;
            for (int64_t r = 0; r < M; ++r)
              out.mean_gamma[size_t(hd * M + r)] += std::exp(logit[size_t(r)] - ell[size_t(j)]);
          }
        }
        masked_softmax_ref(ell, mask);
        for (int64_t j = 0; j < S; ++j) {
          out.weights[size_t(((b * h + hd) * T + i) * S + j)] = ell[size_t(j)];
          for (int64_t ch = 0; ch < p; ++ch)
            heads[size_t((b * T + i) * hp + hd * p + ch)] +=
                ell[size_t(j)] * Vv[size_t((b * S + j) * hp + hd * p + ch)];
        }
      }
  for (int64_t hd = 0; hd < h; ++hd)
    for (int64_t r = 0; r < M; ++r) out.mean_gamma[size_t(hd * M + r)] /= visible[size_t(hd)];
  out.out = linear_ref(heads, B * T, *m.o);
  return out;
}

}  // namespace

TEST_CASE("MGK attention matches the loop reference for every variant: self, causal + padding, cross") {
  for (const Variant& var : kVariants) {
    CAPTURE(variant_name(var));
    auto m = make(config(var, 8, 2));
    m->eval();  // soft_e: π stays put between calls
    Tensor x = input({2, 5, 8}, 1);
    check_close(m->forward(x), mgk_ref(*m, x, x, x, no_mask()).out, 1e-12, 1e-10);
    Tensor pad = bool_tensor({0, 0, 0, 1, 1, 0, 1, 0, 0, 0}, {2, 5});
    check_close(m->forward(x, {.causal = true, .key_padding = pad}),
                mgk_ref(*m, x, x, x, either(causal_mask(), padding_mask(pad))).out, 1e-12, 1e-10);
    // Cross-attention: 3 queries over 4 keys of width 6, M = 3, p = 3 (h·p != d), σ² set.
    auto c = edited(config(var, 8, 2, 3, 3, 6), [](nn::MgkOptions& o) { o.sigma2 = 0.8; });
    auto mc = make(c);
    mc->eval();
    Tensor q = input({2, 3, 8}, 2), k = input({2, 4, 6}, 3), v = input({2, 4, 6}, 4);
    check_close(mc->forward(q, k, v), mgk_ref(*mc, q, k, v, no_mask()).out, 1e-12, 1e-10);
  }
  // float32 against the same reference.
  auto m32 = make(config({"mgk"}, 8, 2), kFloat32);
  Tensor x32 = input({2, 5, 8}, 5, kFloat32);
  check_close(m32->forward(x32, kCausal), mgk_ref(*m32, x32, x32, x32, causal_mask()).out, 1e-5, 1e-4);
}

TEST_CASE("MGK with M = 1 is Gaussian-kernel attention, whatever π") {
  for (const char* type : {"mgk", "smgk"}) {
    CAPTURE(type);
    auto m = make(config({type}, 8, 2, 1));
    Tensor x = input({2, 5, 8}, 11);
    // A_ij ∝ exp(−‖q_i − k_j‖² / 2√p), from the layer's own projections.
    const int64_t B = 2, T = 5, h = 2, p = 4, hp = 8;
    const Vec Q = linear_ref(x.to_vector<double>(), B * T, *m->q), K = linear_ref(x.to_vector<double>(), B * T, *m->k);
    const Vec Vv = linear_ref(x.to_vector<double>(), B * T, *m->v);
    const Vec mu = m->mu.defined() ? m->mu.to_vector<double>() : Vec(size_t(h * p), 0.0);
    Vec heads(size_t(B * T * hp), 0.0);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t hd = 0; hd < h; ++hd)
        for (int64_t i = 0; i < T; ++i) {
          Vec w(static_cast<size_t>(T));
          for (int64_t j = 0; j < T; ++j) {
            double dist = 0;
            for (int64_t c = 0; c < p; ++c) {
              const double diff = Q[size_t((b * T + i) * hp + hd * p + c)] -
                                  (K[size_t((b * T + j) * hp + hd * p + c)] - mu[size_t(hd * p + c)]);
              dist += diff * diff;
            }
            w[size_t(j)] = -dist / (2 * std::sqrt(double(p)));
          }
          masked_softmax_ref(w, std::vector<bool>(size_t(T), false));
          for (int64_t j = 0; j < T; ++j)
            for (int64_t c = 0; c < p; ++c)
              heads[size_t((b * T + i) * hp + hd * p + c)] += w[size_t(j)] * Vv[size_t((b * T + j) * hp + hd * p + c)];
        }
    check_close(m->forward(x), linear_ref(heads, B * T, *m->o), 1e-12, 1e-10);
    // π (a single component) has no effect and gets no gradient.
    backward(sum(m->forward(x)));
    check_close(m->pi_logits.grad(), Vec(2, 0.0), 0, 0);
  }
}

TEST_CASE("MGK attention gradcheck in float64 over inputs and every parameter") {
  for (const Variant& var : kVariants) {
    CAPTURE(variant_name(var));
    auto m = make(config(var, 4, 2, 2));
    if (var.soft_e) m->eval();  // a training forward would move π between evaluations
    Tensor x = leaf64({2, 3, 4}, 21);
    std::vector<Tensor> in{x};
    for (const Tensor& p : m->parameters()) in.push_back(p);
    CHECK_GRADCHECK([&](V a) { return m->forward(a[0], kCausal); }, in);
  }
  // Cross-attention with padding, separate key and value in other layouts.
  auto m = make(config({"smgk"}, 4, 2, 3));
  Tensor q = leaf64({2, 2, 4}, 22), k = leaf64({2, 3, 4}, 23, Layout::Permuted),
         v = leaf64({2, 3, 4}, 24, Layout::Sliced);
  Tensor pad = bool_tensor({0, 1, 0, 0, 0, 0}, {2, 3});
  CHECK_GRADCHECK([&](V a) { return m->forward(a[0], a[1], a[2], {.key_padding = pad}); }, {q, k, v});
}

TEST_CASE("causal MGK attention never leaks: future tokens change no earlier output or gradient") {
  for (const Variant& var : kVariants) {
    CAPTURE(variant_name(var));
    auto m = make(config(var, 8, 2));
    m->eval();
    Tensor x = input({2, 6, 8}, 31);
    Tensor y = m->forward(x, kCausal);
    for (int64_t t0 = 1; t0 < 6; ++t0) {
      CAPTURE(t0);
      Tensor x2 = cat({narrow(x, 1, 0, t0), input({2, 6 - t0, 8}, 32 + uint64_t(t0))}, 1);
      check_close(narrow(m->forward(x2, kCausal), 1, 0, t0), narrow(y, 1, 0, t0), 1e-14, 0);
    }
    Tensor xl = detach(x);
    xl.set_requires_grad(true);
    backward(sum(narrow(m->forward(xl, kCausal), 1, 0, 3)));
    check_close(narrow(xl.grad(), 1, 3, 3), Vec(2 * 3 * 8, 0.0), 0, 0);
  }
}

TEST_CASE("padded keys do not affect MGK outputs, and a fully padded row gives the output bias") {
  for (const Variant& var : kVariants) {
    CAPTURE(variant_name(var));
    auto m = make(config(var, 8, 2));
    m->eval();
    Tensor x = input({2, 5, 8}, 41);
    Tensor pad = bool_tensor({0, 1, 0, 0, 1, 0, 0, 0, 1, 1}, {2, 5});
    Tensor y = m->forward(x, x, x, {.key_padding = pad});
    Tensor kv = where(unsqueeze(pad, -1), input({2, 5, 8}, 42), x);
    check_close(m->forward(x, kv, kv, {.key_padding = pad}), y, 1e-14, 0);
    Tensor z = m->forward(x, {.key_padding = bool_tensor(std::vector<int>(10, 1), {2, 5})});
    check_close(z, expand(m->o->bias, {2, 5, 8}), 1e-14, 0);
  }
}

TEST_CASE("cached MGK decoding one token at a time equals full recomputation") {
  for (const Variant& var : kVariants) {
    CAPTURE(variant_name(var));
    auto m = make(config(var, 8, 2, 3));
    m->eval();
    Tensor x = input({2, 6, 8}, 51);
    Tensor pad = bool_tensor({0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 1, 0}, {2, 6});
    const nn::AttentionCache cache = check_cached_decoding(*m, x, pad);
    CHECK(cache.k.sizes() == Shape{2, 2, 3, 6, 4});
    CHECK(cache.v.sizes() == Shape{2, 2, 6, 4});
  }
}

TEST_CASE("MGK cross-attention static cache projects the memory once and reuses it") {
  for (const char* type : {"mgk", "smgk"}) {
    CAPTURE(type);
    auto m = make(config({type}, 8, 2, 2, 0, 6));
    Tensor q = input({2, 4, 8}, 61), mem = input({2, 5, 6}, 62);
    Tensor pad = bool_tensor({0, 0, 0, 0, 1, 0, 1, 0, 0, 0}, {2, 5});
    const nn::AttentionCache cache = check_static_cache(*m, q, mem, pad, input({2, 5, 6}, 63)).cache;
    CHECK(cache.k.sizes() == Shape{2, 2, 2, 5, 4});
  }
}

TEST_CASE("MGK return_weights stores (B, h, T, S) probabilities whose rows sum to 1") {
  for (const Variant& var : kVariants) {
    CAPTURE(variant_name(var));
    auto m = make(config(var, 8, 2));
    m->eval();
    Tensor x = input({2, 5, 8}, 71);
    Tensor pad = bool_tensor({0, 0, 0, 0, 1, 0, 0, 0, 0, 0}, {2, 5});
    Tensor w = check_returned_weights(*m, x, pad);
    check_close(w, mgk_ref(*m, x, x, x, either(causal_mask(), padding_mask(pad))).weights, 1e-12, 1e-10);
  }
}

TEST_CASE("MGK's fused path equals its composed return_weights path: outputs, every gradient, soft-E π, dropout") {
  for (const Variant& var : kVariants) {
    CAPTURE(variant_name(var));
    auto c = config(var, 8, 2, 3);
    c.dropout = 0.3;
    Tensor x = input({2, 7, 8}, 95);
    Tensor pad = bool_tensor({0, 0, 1, 0, 0, 0, 0, 1, 1, 1, 0, 0, 0, 0}, {2, 7});  // batch 1: rows 0-2 see nothing
    std::vector<Tensor> outs, pis;
    std::vector<std::vector<Tensor>> grads;
    for (bool weights : {false, true}) {
      auto m = make(c);
      m->train();  // dropout on, and the soft-E update of π
      m->return_weights = weights;
      Tensor xl = detach(x);
      xl.set_requires_grad(true);
      manual_seed(1234);  // the same dropout mask on both paths
      Tensor y = m->forward(xl, {.causal = true, .key_padding = pad});
      CHECK(m->record().weights.defined() == weights);
      backward(sum(mul(y, input({2, 7, 8}, 96))));
      outs.push_back(y);
      grads.push_back({xl.grad()});
      for (const Tensor& p : m->parameters()) grads.back().push_back(p.grad());
      if (m->pi.defined()) pis.push_back(detach(m->pi));
    }
    check_close(outs[0], outs[1], 1e-12, 1e-10);
    REQUIRE(grads[0].size() == grads[1].size());
    for (size_t i = 0; i < grads[0].size(); ++i) {
      CAPTURE(i);
      REQUIRE(grads[0][i].defined());
      check_close(grads[0][i], grads[1][i], 1e-12, 1e-10);
    }
    if (var.soft_e) {
      REQUIRE(pis.size() == 2);
      check_close(pis[0], pis[1], 1e-12, 1e-10);
    }
  }
}

TEST_CASE("soft-E: π moves towards the mean responsibilities in training, never in eval") {
  for (const char* type : {"mgk", "smgk"}) {
    CAPTURE(type);
    auto m = make(config({type, false, true}, 8, 2, 3));
    CHECK_FALSE(m->pi_logits.defined());
    for (const Tensor& p : m->parameters()) CHECK_FALSE(p.is_same(m->pi));
    Tensor x = input({2, 5, 8}, 81);
    Tensor pad = bool_tensor({0, 0, 0, 1, 1, 0, 0, 0, 0, 0}, {2, 5});
    const MaskFn masked = either(causal_mask(), padding_mask(pad));

    m->eval();
    const Vec before = m->pi.to_vector<double>();
    m->forward(x, {.causal = true, .key_padding = pad});
    CHECK(m->pi.to_vector<double>() == before);

    m->train();
    const MgkRef ref = mgk_ref(*m, x, x, x, masked);  // with the π in force during this forward
    Tensor y = m->forward(x, {.causal = true, .key_padding = pad});
    check_close(y, ref.out, 1e-12, 1e-10);  // the update comes after the output is computed
    Vec expected(before.size());
    for (size_t i = 0; i < before.size(); ++i) expected[i] = 0.9 * before[i] + 0.1 * ref.mean_gamma[i];
    check_close(m->pi, expected, 1e-12, 1e-10);
    check_close(sum(m->pi, {1}), Vec(2, 1.0), 1e-12, 0);
    // The buffer is part of the state dict and gets no gradient.
    bool found = false;
    for (auto& [name, t] : m->state_dict()) found |= name == "pi";
    CHECK(found);
    CHECK_FALSE(m->pi.requires_grad());
  }
}

TEST_CASE("MGK parameter counts, state-dict names and attention_cost") {
  using Names = std::vector<std::string>;
  auto names = [](const nn::Module& m) {
    Names out;
    for (auto& [n, t] : m.named_parameters()) out.push_back(n);
    return out;
  };
  const int64_t d = 8, h = 2, p = 4, M = 3, hp = h * p;
  auto mgk = make(config({"mgk"}, d, h, M));
  CHECK(mgk->num_parameters() == (M + 3) * hp * d + (M + 2) * hp + d + h * M);
  CHECK(names(*mgk) ==
        Names{"pi_logits", "q.weight", "q.bias", "k.weight", "k.bias", "v.weight", "v.bias", "o.weight", "o.bias"});
  CHECK(mgk->k->weight.sizes() == Shape{M * hp, d});
  auto smgk = make(config({"smgk"}, d, h, M));
  CHECK(smgk->num_parameters() == 4 * hp * d + 3 * hp + d + h * M * p + h * M);
  CHECK(smgk->mu.sizes() == Shape{h, M, p});
  CHECK(names(*smgk)[1] == "mu");
  auto soft = make(config({"mgk", false, true}, d, h, M));
  CHECK(soft->num_parameters() == (M + 3) * hp * d + (M + 2) * hp + d);
  CHECK(soft->named_buffers().size() == 1);
  for (auto var : std::vector<Variant>{{"mgk"}, {"smgk"}, {"mgk", false, true}, {"smgk", false, true}}) {
    auto c = config(var, d, h, M);
    CHECK(nn::attention_cost(c, 16, true).params == make(c)->num_parameters());
    c.bias = false;
    c.kv_dim = 6;
    CHECK(nn::attention_cost(c, 16, true).params == make(c)->num_parameters());
  }
  // The paper's comparison: MGK with 4 heads and 2 keys vs softmax with 8 heads, same width.
  nn::AttentionConfig soft8;
  soft8.d_model = 256;
  soft8.heads = 8;
  auto mgk4 = config({"mgk"}, 256, 4, 2, 32);
  CHECK(nn::attention_cost(mgk4, 512, true).params < nn::attention_cost(soft8, 512, true).params);
  CHECK(nn::attention_cost(mgk4, 512, true).flops_per_token < nn::attention_cost(soft8, 512, true).flops_per_token);
  // The smgk shifts start small and random.
  manual_seed(3);
  nn::MixtureKeyAttention fresh(config({"smgk"}, 8, 2, 2), true);
  const Vec mu = fresh.mu.to_vector<double>();
  double ss = 0;
  for (double v : mu) ss += v * v;
  CHECK(ss > 0);
  CHECK(std::sqrt(ss / double(mu.size())) < 0.1);
}

TEST_CASE("MGK attention dropout acts on the weights in training only") {
  auto c = config({"mgk"}, 8, 2);
  c.dropout = 0.5;
  auto m = make(c);
  Tensor x = input({2, 5, 8}, 91);
  m->eval();
  Tensor y_eval = m->forward(x);
  check_close(y_eval, mgk_ref(*m, x, x, x, no_mask()).out, 1e-12, 1e-10);
  m->train();
  Tensor y_train = m->forward(x);
  CHECK(sum(abs(sub(y_train, y_eval))).item() > 1e-6);
}

TEST_CASE("MGK config and input errors name the field") {
  auto c = config({"mgk", true, true}, 8, 2);
  CHECK_THROWS_WITH_AS(nn::make_attention(c), "attention: hard_e and soft_e cannot both be set", Error);
  c = config({"mgk"}, 8, 2, 0);
  CHECK_THROWS_WITH_AS(nn::make_attention(c), "attention.keys must be >= 1, got 0", Error);
  c = edited(config({"smgk"}, 8, 2), [](nn::MgkOptions& o) { o.sigma2 = -1; });
  CHECK_THROWS_WITH_AS(nn::make_attention(c), "attention.sigma2 must be >= 0 (0 means sqrt(head_dim)), got -1", Error);
  CHECK_THROWS_WITH_AS(nn::make_attention(config({"mgk"}, 10, 3)),
                       doctest::Contains("3 heads do not divide d_model 10"), Error);
  auto m = make(config({"mgk"}, 8, 2));
  CHECK_THROWS_WITH_AS(m->forward(input({2, 5, 7}, 1)), "mgk attention: query must be (B, T, 8), got float64 [2, 5, 7]",
                       Error);
  auto s = make(config({"smgk"}, 8, 2));
  CHECK_THROWS_WITH_AS(s->forward(input({2, 5, 8}, 1), {.key_padding = zeros({2, 4}, {.dtype = kBool})}),
                       "smgk attention: key_padding covers 4 keys but there are 5", Error);
}

TEST_CASE("MGK fidelity switches: pi_momentum 1 replaces π by the batch estimate, shift_init official") {
  // soft-E with the official step: π after one training forward is the batch's mean γ
  auto c = edited(config({"mgk", false, true}, 8, 2, 3), [](nn::MgkOptions& o) { o.pi_momentum = 1; });
  auto m = make(c);
  m->train();
  Tensor x = input({2, 5, 8}, 82);
  const MgkRef ref = mgk_ref(*m, x, x, x, causal_mask());
  m->forward(x, {true, Tensor()});
  check_close(m->pi, ref.mean_gamma, 1e-12, 1e-10);

  // sMGK's official shifts: μ_1 = 0, the others N(0, 0.5²) (sample std over 2·64 values)
  auto sc = edited<nn::SmgkOptions>(config({"smgk"}, 256, 2, 2), [](nn::SmgkOptions& o) { o.shift_init = "official"; });
  manual_seed(4);
  auto s = std::dynamic_pointer_cast<nn::MixtureKeyAttention>(nn::make_attention(sc));
  REQUIRE(s);
  const std::vector<double> mu = s->mu.to_vector<double>();  // (h, M, p)
  const int64_t p = 128;
  double first = 0, sq = 0;
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t i = 0; i < p; ++i) {
      first = std::max(first, std::fabs(mu[size_t((h * 2 + 0) * p + i)]));
      sq += mu[size_t((h * 2 + 1) * p + i)] * mu[size_t((h * 2 + 1) * p + i)];
    }
  CHECK(first == 0);
  CHECK(std::sqrt(sq / double(2 * p)) == doctest::Approx(0.5).epsilon(0.15));

  // errors name the key
  auto bad = edited(config({"mgk"}, 8, 2), [](nn::MgkOptions& o) { o.pi_momentum = 0.5; });
  CHECK_THROWS_WITH_AS(nn::make_attention(bad), "attention.pi_momentum applies to soft_e only (π is learned otherwise)",
                       Error);
  bad = edited(config({"mgk", false, true}, 8, 2), [](nn::MgkOptions& o) { o.pi_momentum = 0; });
  CHECK_THROWS_WITH_AS(nn::make_attention(bad), "attention.pi_momentum must be in (0, 1], got 0", Error);
  // another family's options are refused (the config file names the key: test_config.cpp)
  bad = config({"smgk"}, 8, 2);
  bad.type = "mgk";
  CHECK_THROWS_WITH_AS(nn::make_attention(bad), "attention 'mgk': its options are another family's", Error);
  bad = edited<nn::SmgkOptions>(config({"smgk"}, 8, 2), [](nn::SmgkOptions& o) { o.shift_init = "zeros"; });
  CHECK_THROWS_WITH_AS(nn::make_attention(bad), doctest::Contains("attention.shift_init: expected"), Error);
}
