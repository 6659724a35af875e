// tests/ops/test_linear_attention_op.cpp — causal_linear_attention: forward
// against explicit sums over j <= i (with and without initial sums, e != p,
// every layout), chunked scans that hand their sums on, float32 on long
// sequences, keys that are all zero, gradchecks, gradgradchecks and error
// texts (those the (q, k, v) ops word alike in attention_checks.h).
#include "ops/attention_checks.h"
#include "support/testing.h"

using namespace ks;
using namespace ks::testing;
using V = const std::vector<Tensor>&;

namespace {

constexpr double kEps = 1e-6;

// out[b, h, i, c] = Σ_a q_ia (S0_ac + Σ_{j<=i} k_ja v_jc) / (Σ_a q_ia (z0_a + Σ_{j<=i} k_ja) + eps),
// straight from the definition (no running sums), in double.
std::vector<double> reference(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& s0 = Tensor(),
                              const Tensor& z0 = Tensor(), double eps = kEps) {
  const int64_t B = q.size(0), H = q.size(1), T = q.size(2), P = q.size(3), E = v.size(3);
  const std::vector<double> qv = q.to_vector<double>(), kv = k.to_vector<double>(), vv = v.to_vector<double>();
  const std::vector<double> sv = s0.defined() ? s0.to_vector<double>() : std::vector<double>(size_t(B * H * P * E));
  const std::vector<double> zv = z0.defined() ? z0.to_vector<double>() : std::vector<double>(size_t(B * H * P));
  std::vector<double> out(size_t(B * H * T * E));
  for (int64_t bh = 0; bh < B * H; ++bh)
    for (int64_t i = 0; i < T; ++i) {
      double den = eps;
      for (int64_t a = 0; a < P; ++a) {
        double zi = zv[size_t(bh * P + a)];
        for (int64_t j = 0; j <= i; ++j) zi += kv[size_t((bh * T + j) * P + a)];
        den += qv[size_t((bh * T + i) * P + a)] * zi;
      }
      for (int64_t c = 0; c < E; ++c) {
        double num = 0;
        for (int64_t a = 0; a < P; ++a) {
          double sac = sv[size_t((bh * P + a) * E + c)];
          for (int64_t j = 0; j <= i; ++j) sac += kv[size_t((bh * T + j) * P + a)] * vv[size_t((bh * T + j) * E + c)];
          num += qv[size_t((bh * T + i) * P + a)] * sac;
        }
        out[size_t((bh * T + i) * E + c)] = num / den;
      }
    }
  return out;
}

// Feature-map-like values: positive, as φ = elu + 1 gives.
Tensor pos64(const Shape& s, uint64_t seed, Layout l = Layout::Contiguous) { return leaf64(s, seed, l, 0.1, 1.0); }

}  // namespace

TEST_CASE("causal_linear_attention matches explicit sums over j <= i in every layout") {
  for (Layout l : all_layouts()) {
    CAPTURE(layout_name(l));
    Tensor q = detach(pos64({2, 3, 5, 4}, 1, l)), k = detach(pos64({2, 3, 5, 4}, 2, l));
    Tensor v = detach(leaf64({2, 3, 5, 4}, 3, l));
    check_close(causal_linear_attention(q, k, v), reference(q, k, v), 1e-12, 1e-10);
    // A value width e != p, and initial sums from earlier keys.
    Tensor v6 = detach(leaf64({2, 3, 5, 6}, 4, l));
    Tensor s0 = detach(leaf64({2, 3, 4, 6}, 5, l)), z0 = detach(pos64({2, 3, 4}, 6, l));
    check_close(causal_linear_attention(q, k, v6, s0, z0), reference(q, k, v6, s0, z0), 1e-12, 1e-10);
    check_close(causal_linear_attention(q, k, v6, s0, z0, 0.5), reference(q, k, v6, s0, z0, 0.5), 1e-12, 1e-10);
    // e = 11: one vectorised block of 8 columns and 3 left over.
    Tensor v11 = detach(leaf64({2, 3, 5, 11}, 10, l));
    check_close(causal_linear_attention(q, k, v11), reference(q, k, v11), 1e-12, 1e-10);
  }
  // Enough (b, h) pairs and steps to run on several threads; float32 too.
  Tensor q = detach(pos64({4, 8, 64, 16}, 7)), k = detach(pos64({4, 8, 64, 16}, 8));
  Tensor v = detach(leaf64({4, 8, 64, 16}, 9));
  check_close(causal_linear_attention(q, k, v), reference(q, k, v), 1e-12, 1e-10);
  check_close(causal_linear_attention(to(q, kFloat32), to(k, kFloat32), to(v, kFloat32)), reference(q, k, v), 1e-5,
              1e-4);
  CHECK(causal_linear_attention(zeros({2, 3, 0, 4}), zeros({2, 3, 0, 4}), zeros({2, 3, 0, 4})).sizes() ==
        Shape{2, 3, 0, 4});
}

TEST_CASE("causal_linear_attention: a scan split in two, handing on its sums, equals one scan") {
  Tensor q = detach(pos64({2, 2, 9, 4}, 11)), k = detach(pos64({2, 2, 9, 4}, 12));
  Tensor v = detach(leaf64({2, 2, 9, 3}, 13));
  Tensor whole = causal_linear_attention(q, k, v);
  Tensor k1 = narrow(k, 2, 0, 4), v1 = narrow(v, 2, 0, 4);
  Tensor first = causal_linear_attention(narrow(q, 2, 0, 4), k1, v1);
  Tensor state = matmul(transpose(k1, 2, 3), v1), norm = sum(k1, {2});  // Σ_j k_j v_jᵀ, Σ_j k_j
  Tensor second = causal_linear_attention(narrow(q, 2, 4, 5), narrow(k, 2, 4, 5), narrow(v, 2, 4, 5), state, norm);
  check_close(cat({first, second}, 2), whole, 1e-12, 1e-10);
}

TEST_CASE("causal_linear_attention keeps float32 digits on long sequences") {
  // 4096 steps: the running sums grow to ~1e3 while each step adds ~0.25.
  Tensor q = rand({1, 2, 4096, 8}), k = rand({1, 2, 4096, 8}), v = randn({1, 2, 4096, 8});
  Tensor got = causal_linear_attention(q, k, v);
  Tensor want = causal_linear_attention(to(q, kFloat64), to(k, kFloat64), to(v, kFloat64));
  CHECK(got.dtype() == kFloat32);
  check_close(got, want, 1e-6, 1e-6);
}

TEST_CASE("causal_linear_attention: queries that see only zero keys give 0, and finite gradients") {
  // The first two keys have φk = 0 (as padded keys do): queries 0 and 1 see nothing.
  Tensor k = detach(pos64({1, 2, 4, 3}, 21));
  Tensor mask = tensor({1, 1, 0, 0}, {1, 1, 4, 1}, {.dtype = kFloat64});
  k = detach(mul(k, sub(1.0, mask)));
  k.set_requires_grad(true);
  Tensor q = pos64({1, 2, 4, 3}, 22), v = leaf64({1, 2, 4, 3}, 23);
  Tensor out = causal_linear_attention(q, k, v);
  std::vector<double> o = out.to_vector<double>();
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t c = 0; c < 3; ++c) CHECK(o[size_t((h * 4 + i) * 3 + c)] == 0.0);
  check_close(out, reference(q, k, v), 1e-12, 1e-10);
  backward(sum(out));
  for (const Tensor& t : {q.grad(), k.grad(), v.grad()})
    for (double x : t.to_vector<double>()) CHECK(std::isfinite(x));
  // With eps = 0 the same queries divide 0 by 0: eps is what keeps them finite.
  CHECK(std::isnan(causal_linear_attention(q, k, v, Tensor(), Tensor(), 0.0).to_vector<double>()[0]));
}

TEST_CASE("causal_linear_attention gradchecks over every layout, with initial sums and expanded inputs") {
  for (Layout l : all_layouts()) {
    CAPTURE(layout_name(l));
    Tensor q = pos64({2, 2, 4, 3}, 31, l), k = pos64({2, 2, 4, 3}, 32, l), v = leaf64({2, 2, 4, 5}, 33, l);
    CHECK_GRADCHECK([](V t) { return causal_linear_attention(t[0], t[1], t[2]); }, {q, k, v});
    Tensor s0 = leaf64({2, 2, 3, 5}, 34, l), z0 = pos64({2, 2, 3}, 35, l);
    CHECK_GRADCHECK([](V t) { return causal_linear_attention(t[0], t[1], t[2], t[3], t[4]); }, {q, k, v, s0, z0});
  }
  // e = 11 and p = 9: blocks of 8 value columns plus a remainder, in every gradient.
  Tensor q9 = pos64({1, 2, 4, 9}, 42), k9 = pos64({1, 2, 4, 9}, 43), v11 = leaf64({1, 2, 4, 11}, 44);
  Tensor s11 = leaf64({1, 2, 9, 11}, 45), z9 = pos64({1, 2, 9}, 46);
  CHECK_GRADCHECK([](V t) { return causal_linear_attention(t[0], t[1], t[2], t[3], t[4]); }, {q9, k9, v11, s11, z9});
  // Only some inputs want gradients (the kernel skips the others).
  Tensor q = pos64({1, 2, 5, 3}, 36), k = pos64({1, 2, 5, 3}, 37), v = leaf64({1, 2, 5, 3}, 38);
  Tensor kc = detach(k), vc = detach(v), qc = detach(q);
  CHECK_GRADCHECK([&](V t) { return causal_linear_attention(t[0], kc, vc); }, {q});
  CHECK_GRADCHECK([&](V t) { return causal_linear_attention(qc, kc, t[0]); }, {v});
  CHECK_GRADCHECK([&](V t) { return causal_linear_attention(qc, t[0], vc); }, {k});
  // A value shared by every head, and keys shared along time, via expand.
  Tensor v1 = leaf64({1, 1, 5, 3}, 39), k1 = pos64({1, 2, 1, 3}, 40);
  CHECK_GRADCHECK(
      [&](V t) {
        return causal_linear_attention(t[0], expand(t[1], {1, 2, 5, 3}), expand(t[2], {1, 2, 5, 3}));
      },
      {q, k1, v1});
  // The value of the output matters, not just its sum: weight it.
  Tensor w = leaf64({1, 2, 5, 3}, 41);
  CHECK_GRADCHECK([](V t) { return mul(causal_linear_attention(t[0], t[1], t[2]), t[3]); }, {q, k, v, w});
}

TEST_CASE("causal_linear_attention gradgradchecks, with and without initial sums") {
  Tensor q = pos64({2, 1, 3, 2}, 101), k = pos64({2, 1, 3, 2}, 102), v = leaf64({2, 1, 3, 2}, 103);
  CHECK_GRADGRADCHECK([](V a) { return causal_linear_attention(a[0], a[1], a[2]); }, {q, k, v});
  Tensor s0 = leaf64({2, 1, 2, 2}, 104), z0 = pos64({2, 1, 2}, 105);
  CHECK_GRADGRADCHECK([](V a) { return causal_linear_attention(a[0], a[1], a[2], a[3], a[4], 0.5); },
                      {q, k, v, s0, z0});
}

TEST_CASE("causal_linear_attention reports bad shapes and dtypes") {
  check_qkv_errors([](const Tensor& q, const Tensor& k, const Tensor& v) { return causal_linear_attention(q, k, v); },
                   "causal_linear_attention", "phi_q", "phi_k", 5);
  Tensor q = rand({2, 3, 5, 4}), k = rand({2, 3, 5, 4}), v = rand({2, 3, 5, 6});
  CHECK_THROWS_WITH_AS(causal_linear_attention(q, rand({2, 3, 5, 3}), v),
                       "causal_linear_attention: phi_k float32 [2, 3, 5, 3] must match phi_q float32 [2, 3, 5, 4]",
                       Error);
  CHECK_THROWS_WITH_AS(causal_linear_attention(q, k, rand({2, 3, 4, 6})),
                       "causal_linear_attention: v must be (2, 3, 5, e) to match phi_q float32 [2, 3, 5, 4], got "
                       "float32 [2, 3, 4, 6]",
                       Error);
  CHECK_THROWS_WITH_AS(causal_linear_attention(q, k, v, rand({2, 3, 4, 6})),
                       "causal_linear_attention: state and norm must be given together (state float32 [2, 3, 4, 6], "
                       "norm undefined)",
                       Error);
  CHECK_THROWS_WITH_AS(causal_linear_attention(q, k, v, rand({2, 3, 4, 4}), rand({2, 3, 4})),
                       "causal_linear_attention: state must be (B, h, p, e) = [2, 3, 4, 6], got float32 [2, 3, 4, 4]",
                       Error);
  CHECK_THROWS_WITH_AS(causal_linear_attention(q, k, v, rand({2, 3, 4, 6}), rand({2, 3, 6})),
                       "causal_linear_attention: norm must be (B, h, p) = [2, 3, 4], got float32 [2, 3, 6]", Error);
  CHECK_THROWS_WITH_AS(causal_linear_attention(q, k, v, Tensor(), Tensor(), -1.0),
                       "causal_linear_attention: eps must be finite and >= 0, got -1", Error);
}
