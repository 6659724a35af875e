// tests/ops/test_attention_op.cpp — scaled_dot_product_attention: forward
// against explicit loops, agreement (values and gradients) with the composed
// path matmul → masked_fill → softmax → dropout → matmul under causal masks
// with an offset, key padding and fully masked rows, dropout masks and
// generator offsets equal to dropout()'s, shapes across several tiles,
// gradchecks over layouts (with masks, dropout and expanded inputs),
// gradgradchecks (create_graph through the composition in ops) and error texts
// (those the (q, k, v) ops word alike in attention_checks.h).
#include <limits>

#include "ops/attention_checks.h"
#include "ops/ops_testing.h"
#include "support/testing.h"

using namespace ks;
using namespace ks::testing;
using V = const std::vector<Tensor>&;

namespace {

// The module's old path, op by op.
Tensor composed(const Tensor& q, const Tensor& k, const Tensor& v, const SdpaOptions& o) {
  const double scale = o.scale > 0 ? o.scale : 1.0 / std::sqrt(double(q.size(3)));
  Tensor s = mul(matmul(q, transpose(k, -1, -2)), scale);
  Tensor h = attention_hidden_mask(q.size(0), q.size(2), k.size(2), o.causal, o.causal_offset, o.window, o.key_padding,
                                   q.device());
  if (h.defined()) s = masked_fill(s, h, -INFINITY);
  return matmul(dropout(softmax(s, -1), o.dropout_p, o.training, o.gen), v);
}

// out[b, h, i, :] = Σ_j w_ij v_j, w = softmax over the visible j of
// scale·q_i·k_j, times drop[b, h, i, j] when given; all in double loops.
std::vector<double> reference(const Tensor& q, const Tensor& k, const Tensor& v, const SdpaOptions& o,
                              const std::vector<double>& drop = {}) {
  const int64_t B = q.size(0), H = q.size(1), T = q.size(2), P = q.size(3), S = k.size(2), E = v.size(3);
  const double scale = o.scale > 0 ? o.scale : 1.0 / std::sqrt(double(P));
  const std::vector<double> qv = q.to_vector<double>(), kv = k.to_vector<double>(), vv = v.to_vector<double>();
  const std::vector<double> pad = o.key_padding.defined() ? o.key_padding.to_vector<double>() : std::vector<double>();
  std::vector<double> out(size_t(B * H * T * E), 0.0), w(static_cast<size_t>(S));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < T; ++i) {
        const int64_t bh = b * H + h;
        double mx = -INFINITY;
        for (int64_t j = 0; j < S; ++j) {
          const bool masked = (o.causal && j > o.causal_offset + i) || (!pad.empty() && pad[size_t(b * S + j)] != 0);
          double s = 0;
          for (int64_t a = 0; a < P; ++a) s += qv[size_t((bh * T + i) * P + a)] * kv[size_t((bh * S + j) * P + a)];
          w[size_t(j)] = masked ? -INFINITY : s * scale;
          mx = std::max(mx, w[size_t(j)]);
        }
        if (mx == -INFINITY) continue;  // sees nothing: zeros
        double z = 0;
        for (int64_t j = 0; j < S; ++j) z += (w[size_t(j)] = std::exp(w[size_t(j)] - mx));
        for (int64_t j = 0; j < S; ++j) {
          double wj = w[size_t(j)] / z;
          if (!drop.empty()) wj *= drop[size_t((bh * T + i) * S + j)];
          for (int64_t c = 0; c < E; ++c) out[size_t((bh * T + i) * E + c)] += wj * vv[size_t((bh * S + j) * E + c)];
        }
      }
  return out;
}

// Values and all three gradients of sum(out ∘ w), fused against composed.
void check_against_composed(const Tensor& q0, const Tensor& k0, const Tensor& v0, const SdpaOptions& o, double tol,
                            uint64_t seed = 0) {
  std::vector<Tensor> got_g, want_g;
  Tensor got, want;
  for (int pass = 0; pass < 2; ++pass) {
    Tensor q = detach(q0).set_requires_grad(true), k = detach(k0).set_requires_grad(true),
           v = detach(v0).set_requires_grad(true);
    SdpaOptions oo = o;
    Generator gen(seed);
    if (o.training) oo.gen = &gen;
    Tensor y = pass == 0 ? scaled_dot_product_attention(q, k, v, oo) : composed(q, k, v, oo);
    Generator wg(77);
    backward(sum(mul(y, rand(y.sizes(), {.dtype = y.dtype()}, &wg))));
    (pass == 0 ? got : want) = y;
    (pass == 0 ? got_g : want_g) = {q.grad(), k.grad(), v.grad()};
  }
  check_close(got, want, tol, tol);
  for (size_t i = 0; i < 3; ++i) {
    CAPTURE(i);
    check_close(got_g[i], want_g[i], tol, tol);
  }
}

}  // namespace

TEST_CASE("scaled_dot_product_attention matches explicit loops in every layout") {
  for (Layout l : all_layouts()) {
    CAPTURE(layout_name(l));
    Tensor q = detach(lf({2, 3, 5, 4}, 1, l)), k = detach(lf({2, 3, 7, 4}, 2, l)), v = detach(lf({2, 3, 7, 6}, 3, l));
    check_close(scaled_dot_product_attention(q, k, v), reference(q, k, v, {}), 1e-12, 1e-10);
    SdpaOptions o{.scale = 0.3, .causal = true, .causal_offset = 2, .key_padding = padding(2, 7, {{0, 1}, {1, 6}})};
    check_close(scaled_dot_product_attention(q, k, v, o), reference(q, k, v, o), 1e-12, 1e-10);
  }
  // Heads split from (B, T, h·p) as the modules do: rows with a stride of h·p, read in place.
  {
    Tensor x = detach(lf({2, 5, 3 * 4}, 7)), m = detach(lf({2, 7, 3 * 6}, 8));
    Tensor q = transpose(view(x, {2, 5, 3, 4}), 1, 2), v = transpose(view(m, {2, 7, 3, 6}), 1, 2);
    Tensor k = transpose(view(narrow(m, 2, 0, 12), {2, 7, 3, 4}), 1, 2);
    SdpaOptions o{.causal = true, .causal_offset = 1};
    check_close(scaled_dot_product_attention(q, k, v, o), reference(q, k, v, o), 1e-12, 1e-10);
  }
  // float32, T and S across several tiles, e != p.
  Tensor q = detach(lf({2, 2, 70, 8}, 4)), k = detach(lf({2, 2, 300, 8}, 5)), v = detach(lf({2, 2, 300, 5}, 6));
  for (bool causal : {false, true}) {
    CAPTURE(causal);
    SdpaOptions o{.causal = causal, .causal_offset = 230, .key_padding = padding(2, 300, {{0, 0}, {1, 299}, {1, 3}})};
    const std::vector<double> want = reference(q, k, v, o);
    check_close(scaled_dot_product_attention(q, k, v, o), want, 1e-12, 1e-10);
    check_close(scaled_dot_product_attention(to(q, kFloat32), to(k, kFloat32), to(v, kFloat32), o), want, 1e-5, 1e-4);
  }
  // Empty sizes.
  CHECK(scaled_dot_product_attention(zeros({2, 3, 0, 4}), zeros({2, 3, 5, 4}), zeros({2, 3, 5, 6})).sizes() ==
        Shape{2, 3, 0, 6});
  check_close(scaled_dot_product_attention(ones({1, 2, 3, 4}), zeros({1, 2, 0, 4}), zeros({1, 2, 0, 5})),
              std::vector<double>(30, 0.0));
}

TEST_CASE("scaled_dot_product_attention: a decoding step's single query row") {
  // A query of length 1 sums its weighted values key by key
  // (ops/cpu/attention_products.h, add_weighted_values_row): value widths
  // with whole blocks of 32 columns, a block and a tail, a tail alone; keys
  // across two key tiles (the running max rescales), a causal offset and
  // padded keys.
  for (int64_t E : {32, 40, 5, 64}) {
    CAPTURE(E);
    const int64_t B = 3, H = 2, S = 300;
    Tensor q = detach(lf({B, H, 1, 8}, 21)), k = detach(lf({B, H, S, 8}, 22)), v = detach(lf({B, H, S, E}, 23));
    SdpaOptions o{.causal = true, .causal_offset = S - 1, .key_padding = padding(B, S, {{0, 0}, {1, 299}, {2, 17}})};
    const std::vector<double> want = reference(q, k, v, o);
    check_close(scaled_dot_product_attention(q, k, v, o), want, 1e-12, 1e-10);
    const Tensor q32 = to(q, kFloat32), k32 = to(k, kFloat32), v32 = to(v, kFloat32);
    const Tensor y = scaled_dot_product_attention(q32, k32, v32, o);
    check_close(y, want, 1e-5, 1e-4);
    // A sequence decoded in a batch gets the bits it gets alone.
    for (int64_t b = 0; b < B; ++b) {
      CAPTURE(b);
      SdpaOptions ob = o;
      ob.key_padding = narrow(o.key_padding, 0, b, 1);
      const Tensor alone =
          scaled_dot_product_attention(narrow(q32, 0, b, 1), narrow(k32, 0, b, 1), narrow(v32, 0, b, 1), ob);
      CHECK(contiguous(narrow(y, 0, b, 1)).to_vector<float>() == alone.to_vector<float>());
    }
  }
}

TEST_CASE("scaled_dot_product_attention equals the composed path, values and gradients, with every mask") {
  Tensor q = lf({2, 2, 6, 3}, 11), k = lf({2, 2, 9, 3}, 12), v = lf({2, 2, 9, 4}, 13);
  // Batch 1 hides its first three keys: with causal offset 0 its first rows see nothing.
  Tensor pad = padding(2, 9, {{0, 4}, {1, 0}, {1, 1}, {1, 2}});
  for (bool causal : {false, true})
    for (int64_t offset : {0, 3, -2})
      for (bool use_pad : {false, true}) {
        CAPTURE(causal);
        CAPTURE(offset);
        CAPTURE(use_pad);
        SdpaOptions o{.causal = causal, .causal_offset = offset, .key_padding = use_pad ? pad : Tensor()};
        check_against_composed(q, k, v, o, 1e-12);
      }
  // A fully masked row gives zeros and zero gradient (not NaN).
  Tensor qq = lf({1, 1, 3, 2}, 14), kk = lf({1, 1, 4, 2}, 15), vv = lf({1, 1, 4, 2}, 16);
  Tensor y = scaled_dot_product_attention(qq, kk, vv, {.causal = true, .causal_offset = -1});
  std::vector<double> yv = y.to_vector<double>();
  CHECK(yv[0] == 0.0);
  CHECK(yv[1] == 0.0);
  backward(sum(y));
  for (double x : qq.grad().to_vector<double>()) CHECK(std::isfinite(x));
  CHECK(qq.grad().to_vector<double>()[0] == 0.0);
  // Across tiles (T = 70, S = 133), float64 and float32.
  Tensor q2 = lf({1, 2, 70, 8}, 17), k2 = lf({1, 2, 133, 8}, 18), v2 = lf({1, 2, 133, 12}, 19);
  Tensor pad2 = padding(1, 133, {{0, 5}, {0, 130}});
  for (bool causal : {false, true}) {
    CAPTURE(causal);
    SdpaOptions o{.causal = causal, .causal_offset = 63, .key_padding = pad2};
    check_against_composed(q2, k2, v2, o, 1e-11);
    check_against_composed(to(detach(q2), kFloat32), to(detach(k2), kFloat32), to(detach(v2), kFloat32), o, 2e-5);
  }
}

TEST_CASE("scaled_dot_product_attention: dropout draws dropout()'s mask and advances the generator as much") {
  Tensor q = lf({2, 3, 70, 4}, 21), k = lf({2, 3, 133, 4}, 22), v = lf({2, 3, 133, 5}, 23);
  for (double p : {0.1, 0.5, 1.0})
    for (bool causal : {false, true}) {
      CAPTURE(p);
      CAPTURE(causal);
      SdpaOptions o{.causal = causal, .causal_offset = 60, .dropout_p = p, .training = true};
      check_against_composed(q, k, v, o, 1e-11, 1234);
      check_against_composed(to(detach(q), kFloat32), to(detach(k), kFloat32), to(detach(v), kFloat32), o, 2e-5, 99);
      // The reference with the mask from dropout() itself, and the generator offsets.
      Generator g1(5), g2(5);
      g1.reserve(3);
      g2.reserve(3);
      o.gen = &g1;
      Tensor got = scaled_dot_product_attention(detach(q), detach(k), detach(v), o);
      const std::vector<double> drop =
          dropout(ones({2, 3, 70, 133}, {.dtype = kFloat64}), p, true, &g2).to_vector<double>();
      CHECK(g1.offset() == g2.offset());
      o.gen = nullptr;
      check_close(got, reference(q, k, v, o, drop), 1e-12, 1e-10);
    }
  // Not training, or p = 0: nothing is drawn.
  Generator g(9);
  scaled_dot_product_attention(q, k, v, {.dropout_p = 0.5, .training = false, .gen = &g});
  scaled_dot_product_attention(q, k, v, {.dropout_p = 0.0, .training = true, .gen = &g});
  CHECK(g.offset() == 0);
  // The global generator when none is given.
  manual_seed(31);
  Tensor a = scaled_dot_product_attention(q, k, v, {.dropout_p = 0.3, .training = true});
  manual_seed(31);
  Tensor b = composed(q, k, v, {.dropout_p = 0.3, .training = true});
  check_close(a, b, 1e-12, 1e-10);
}

TEST_CASE("scaled_dot_product_attention gradchecks over every layout, with masks, dropout and expanded inputs") {
  Tensor pad = padding(2, 6, {{0, 2}, {1, 0}, {1, 1}});
  for (Layout l : all_layouts()) {
    CAPTURE(layout_name(l));
    Tensor q = lf({2, 2, 4, 3}, 31, l), k = lf({2, 2, 6, 3}, 32, l), v = lf({2, 2, 6, 5}, 33, l);
    CHECK_GRADCHECK([](V t) { return scaled_dot_product_attention(t[0], t[1], t[2]); }, {q, k, v});
    CHECK_GRADCHECK(
        [&](V t) {
          return scaled_dot_product_attention(t[0], t[1], t[2],
                                              {.scale = 0.7, .causal = true, .causal_offset = 1, .key_padding = pad});
        },
        {q, k, v});
    CHECK_GRADCHECK(
        [&](V t) {
          Generator gen(42);  // the same mask on every evaluation
          return scaled_dot_product_attention(
              t[0], t[1], t[2], {.causal = true, .causal_offset = 2, .dropout_p = 0.3, .training = true, .gen = &gen});
        },
        {q, k, v});
  }
  // Keys and values shared by every head, via expand; a weighted output.
  Tensor q = lf({1, 3, 5, 2}, 34), k1 = lf({1, 1, 4, 2}, 35), v1 = lf({1, 1, 4, 3}, 36), w = lf({1, 3, 5, 3}, 37);
  CHECK_GRADCHECK(
      [](V t) {
        return mul(scaled_dot_product_attention(t[0], expand(t[1], {1, 3, 4, 2}), expand(t[2], {1, 3, 4, 3})), t[3]);
      },
      {q, k1, v1, w});
  // Only one input wants a gradient.
  Tensor qc = detach(q), kc = detach(lf({1, 3, 4, 2}, 38)), vc = detach(lf({1, 3, 4, 3}, 39));
  CHECK_GRADCHECK([&](V t) { return scaled_dot_product_attention(qc, t[0], vc, {.causal = true}); },
                  {lf({1, 3, 4, 2}, 40)});
}

TEST_CASE("scaled_dot_product_attention gradgradchecks: masks with a row that sees nothing, dropout") {
  // Batch 1 hides key 0: with causal offset 0 its first query sees nothing.
  const Tensor pad = padding(2, 4, {{0, 3}, {1, 0}});
  const std::vector<SdpaOptions> options = {
      {},
      {.causal = true, .key_padding = pad},
      {.scale = 0.7, .causal = true, .causal_offset = 1},
      {.key_padding = pad, .dropout_p = 0.4, .training = true},
  };
  gradgradcheck_attention(options,
                          [](V a, const SdpaOptions& o) { return scaled_dot_product_attention(a[0], a[1], a[2], o); },
                          {lf({2, 1, 3, 2}, 81), lf({2, 1, 4, 2}, 82), lf({2, 1, 4, 2}, 83)});
}

TEST_CASE("scaled_dot_product_attention reports bad shapes and dtypes") {
  check_qkv_errors(
      [](const Tensor& q, const Tensor& k, const Tensor& v) { return scaled_dot_product_attention(q, k, v); },
      "scaled_dot_product_attention", "q", "k", 7);
  Tensor q = rand({2, 3, 5, 4}), k = rand({2, 3, 7, 4}), v = rand({2, 3, 7, 6});
  CHECK_THROWS_WITH_AS(scaled_dot_product_attention(q, rand({2, 3, 7, 3}), v),
                       "scaled_dot_product_attention: k must be (2, 3, S, 4) to match q float32 [2, 3, 5, 4], got "
                       "float32 [2, 3, 7, 3]",
                       Error);
  CHECK_THROWS_WITH_AS(scaled_dot_product_attention(q, k, rand({2, 3, 6, 6})),
                       "scaled_dot_product_attention: v must be (2, 3, 7, e) to match k float32 [2, 3, 7, 4], got "
                       "float32 [2, 3, 6, 6]",
                       Error);
  CHECK_THROWS_WITH_AS(scaled_dot_product_attention(q, k, v, {.key_padding = zeros({2, 7})}),
                       "scaled_dot_product_attention: key_padding must be bool (2, 7), got float32 [2, 7]", Error);
  CHECK_THROWS_WITH_AS(scaled_dot_product_attention(q, k, v, {.key_padding = zeros({2, 5}, {.dtype = kBool})}),
                       "scaled_dot_product_attention: key_padding must be bool (2, 7), got bool [2, 5]", Error);
  CHECK_THROWS_WITH_AS(scaled_dot_product_attention(q, k, v, {.dropout_p = 1.5}),
                       "scaled_dot_product_attention: dropout_p must be in [0, 1], got 1.5", Error);
  CHECK_THROWS_WITH_AS(scaled_dot_product_attention(q, k, v, {.window = 3}),
                       "scaled_dot_product_attention: a sliding window (window 3) applies to causal attention only",
                       Error);
  CHECK_THROWS_WITH_AS(scaled_dot_product_attention(q, k, v, {.causal = true, .window = -1}),
                       "scaled_dot_product_attention: window must be >= 0 (0: none), got -1", Error);
}
