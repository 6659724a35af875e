// tests/ops/test_mixture_attention.cpp — mixture_attention (the fused MGK
// attention): values and the gradients of q, k, bias and v against the
// composed path matmul → mixture_softmax → dropout → matmul, soft and hard,
// M = 1..3, under causal masks with offsets, key padding and fully masked
// rows; hard-E ties; T and S across tile edges; dropout masks and generator
// offsets equal to dropout()'s; soft-E totals against mixture_softmax's
// responsibilities; strided, permuted and broadcast (stride-0) inputs;
// sMGK-shaped keys; float64 gradchecks and gradgradchecks; thread-count
// independence; the AVX-512 twins against the AVX2 code, bit for bit; error
// texts.
// Not here: the CUDA kernels (tests/cuda/test_mixture_attention.cpp), the
// module (tests/nn/test_mgk_attention.cpp).
#include <cmath>
#include <limits>

#include "core/cpu_features.h"
#include "ops/cpu/avx512_clone.h"
#include "ops/mixture.h"
#include "ops/mixture_attention.h"
#include "ops/ops_testing.h"
#include "support/testing.h"

using namespace ks;
using namespace ks::testing;
using V = const std::vector<Tensor>&;

namespace {

double resolved_scale(const Tensor& q, const MixtureAttentionOptions& o) {
  return o.scale > 0 ? o.scale : 1.0 / std::sqrt(double(q.size(3)));
}

// The module's composed path, op by op; totals as Σ over i and j of γ.
MixtureAttention composed(const Tensor& q, const Tensor& k, const Tensor& bias, const Tensor& v,
                          const MixtureAttentionOptions& o) {
  const int64_t B = q.size(0), H = q.size(1), T = q.size(2), P = q.size(3), M = k.size(2), S = k.size(3);
  Tensor scores = view(matmul(q, transpose(reshape(k, {B, H, M * S, P}), -1, -2)), {B, H, T, M, S});
  Tensor mask = attention_hidden_mask(B, T, S, o.causal, o.causal_offset, 0, o.key_padding, q.device());
  MixtureSoftmax mix =
      mixture_softmax(scores, bias, resolved_scale(q, o), mask, {.hard = o.hard, .responsibilities = o.totals});
  MixtureAttention r;
  r.out = matmul(dropout(mix.weights, o.dropout_p, o.training, o.gen), v);
  if (o.totals) r.totals = sum(mix.responsibilities, {2, 4});
  return r;
}

struct Inputs {
  Tensor q, k, bias, v;
};
Inputs inputs(int64_t B, int64_t H, int64_t T, int64_t S, int64_t M, int64_t P, int64_t E, uint64_t seed,
              Layout l = Layout::Contiguous) {
  return {lf({B, H, T, P}, seed, l), lf({B, H, M, S, P}, seed + 1, l), lf({B, H, M, S}, seed + 2, l),
          lf({B, H, S, E}, seed + 3, l)};
}
Inputs to32(const Inputs& in) {
  return {to(detach(in.q), kFloat32), to(detach(in.k), kFloat32), to(detach(in.bias), kFloat32),
          to(detach(in.v), kFloat32)};
}

// Values, totals and all four gradients of sum(out ∘ w), fused against composed.
void check_against_composed(const Inputs& in, const MixtureAttentionOptions& o, double tol, uint64_t seed = 0) {
  std::vector<Tensor> got_g, want_g;
  MixtureAttention got, want;
  for (int pass = 0; pass < 2; ++pass) {
    Tensor q = detach(in.q).set_requires_grad(true), k = detach(in.k).set_requires_grad(true),
           b = detach(in.bias).set_requires_grad(true), v = detach(in.v).set_requires_grad(true);
    MixtureAttentionOptions oo = o;
    Generator gen(seed);
    if (o.training) oo.gen = &gen;
    MixtureAttention y = pass == 0 ? mixture_attention(q, k, b, v, oo) : composed(q, k, b, v, oo);
    Generator wg(77);
    backward(sum(mul(y.out, rand(y.out.sizes(), {.dtype = y.out.dtype()}, &wg))));
    (pass == 0 ? got : want) = y;
    (pass == 0 ? got_g : want_g) = {q.grad(), k.grad(), b.grad(), v.grad()};
  }
  check_close(got.out, want.out, tol, tol);
  if (o.totals) {
    REQUIRE(got.totals.defined());
    CHECK_FALSE(got.totals.requires_grad());
    check_close(got.totals, want.totals, tol, tol);
  }
  for (size_t i = 0; i < 4; ++i) {
    CAPTURE(i);
    REQUIRE(got_g[i].defined());
    check_close(got_g[i], want_g[i], tol, tol);
  }
}

}  // namespace

TEST_CASE("mixture_attention equals the composed path, values and gradients: M = 1..3, soft and hard, every mask") {
  // Batch 1 hides its first three keys: with causal offset 0 its first rows see nothing.
  Tensor pad = padding(2, 9, {{0, 4}, {1, 0}, {1, 1}, {1, 2}});
  for (int64_t M : {1, 2, 3})
    for (bool hard : {false, true}) {
      const Inputs in = inputs(2, 2, 6, 9, M, 3, 4, 10 + uint64_t(M));
      for (bool causal : {false, true})
        for (int64_t offset : causal ? std::vector<int64_t>{0, 3, -2} : std::vector<int64_t>{0})
          for (bool use_pad : {false, true}) {
            CAPTURE(M);
            CAPTURE(hard);
            CAPTURE(causal);
            CAPTURE(offset);
            CAPTURE(use_pad);
            MixtureAttentionOptions o{.scale = 0.6,
                                      .hard = hard,
                                      .totals = true,
                                      .causal = causal,
                                      .causal_offset = offset,
                                      .key_padding = use_pad ? pad : Tensor()};
            check_against_composed(in, o, 1e-12);
          }
    }
}

TEST_CASE("mixture_attention's AVX-512 twins give the AVX2 code's bits, forward and backward") {
  if (!cpu_features().avx512) {
    MESSAGE("no AVX-512 on this CPU: only the AVX2 code runs, nothing to compare");
    return;
  }
  Tensor pad = zeros({2, 150}, {.dtype = kBool});
  pad.data<bool>()[3] = pad.data<bool>()[150 + 149] = true;
  struct Case {
    int64_t M;
    MixtureAttentionOptions o;
  };
  for (const Case& c : {Case{2, {.totals = true, .causal = true, .key_padding = pad}}, Case{3, {.hard = true}},
                        Case{2, {.totals = true, .dropout_p = 0.2, .training = true}}}) {
    CAPTURE(c.M);
    const Inputs in = to32(inputs(2, 2, 150, 150, c.M, 16, 8, 90));
    std::vector<std::vector<float>> runs[2];
    for (int twins = 0; twins < 2; ++twins) {
      const bool before = cpu::set_avx512_twins(twins == 1);
      Tensor q = detach(in.q).set_requires_grad(true), k = detach(in.k).set_requires_grad(true),
             b = detach(in.bias).set_requires_grad(true), v = detach(in.v).set_requires_grad(true);
      MixtureAttentionOptions o = c.o;
      Generator gen(5);
      o.gen = &gen;
      MixtureAttention y = mixture_attention(q, k, b, v, o);
      Generator wg(78);
      backward(sum(mul(y.out, rand(y.out.sizes(), {}, &wg))));
      cpu::set_avx512_twins(before);
      runs[twins] = {y.out.to_vector<float>(), q.grad().to_vector<float>(), k.grad().to_vector<float>(),
                     b.grad().to_vector<float>(), v.grad().to_vector<float>()};
      if (y.totals.defined()) runs[twins].push_back(y.totals.to_vector<float>());
    }
    CHECK(runs[0] == runs[1]);
  }
}

TEST_CASE("mixture_attention: a query that sees no key gives zeros and zero gradient, never NaN") {
  for (bool hard : {false, true}) {
    CAPTURE(hard);
    Inputs in = inputs(1, 1, 3, 4, 2, 2, 2, 14);
    // Offset -1: query 0 sees nothing; every key of batch 0 padded in the second call.
    for (const MixtureAttentionOptions& o :
         {MixtureAttentionOptions{.hard = hard, .totals = true, .causal = true, .causal_offset = -1},
          MixtureAttentionOptions{
              .hard = hard, .totals = true, .key_padding = padding(1, 4, {{0, 0}, {0, 1}, {0, 2}, {0, 3}})}}) {
      Tensor q = detach(in.q).set_requires_grad(true), k = detach(in.k).set_requires_grad(true),
             b = detach(in.bias).set_requires_grad(true), v = detach(in.v).set_requires_grad(true);
      MixtureAttention y = mixture_attention(q, k, b, v, o);
      const std::vector<double> yv = y.out.to_vector<double>();
      CHECK(yv[0] == 0.0);
      CHECK(yv[1] == 0.0);
      backward(sum(y.out));
      for (const Tensor& g : {q.grad(), k.grad(), b.grad(), v.grad()})
        for (double x : g.to_vector<double>()) CHECK(std::isfinite(x));
      CHECK(q.grad().to_vector<double>()[0] == 0.0);
      CHECK(q.grad().to_vector<double>()[1] == 0.0);
      for (double x : y.totals.to_vector<double>()) CHECK(std::isfinite(x));
      check_against_composed(in, o, 1e-12);
    }
  }
  // No keys at all (S = 0): zeros, totals 0.
  MixtureAttention e = mixture_attention(ones({1, 2, 3, 4}), zeros({1, 2, 2, 0, 4}), zeros({1, 2, 2, 0}),
                                         zeros({1, 2, 0, 5}), {.totals = true});
  check_close(e.out, std::vector<double>(30, 0.0), 0, 0);
  check_close(e.totals, std::vector<double>(4, 0.0), 0, 0);
  // No queries.
  CHECK(mixture_attention(zeros({2, 3, 0, 4}), zeros({2, 3, 2, 5, 4}), zeros({2, 3, 2, 5}), zeros({2, 3, 5, 6}))
            .out.sizes() == Shape{2, 3, 0, 6});
}

TEST_CASE("mixture_attention across tile edges: T, S in {1, 15, 17, 65, 300}, float64 and float32") {
  const std::vector<int64_t> sizes{1, 15, 17, 65, 300};
  uint64_t seed = 100;
  for (int64_t T : sizes)
    for (int64_t S : sizes) {
      const int64_t M = 1 + int64_t(seed % 3);
      const bool causal = seed % 2 == 0, hard = seed % 5 == 0;
      CAPTURE(T);
      CAPTURE(S);
      CAPTURE(M);
      CAPTURE(causal);
      CAPTURE(hard);
      const Inputs in = inputs(1, 2, T, S, M, 5, 3, seed);
      // Causal with the keys a cache would hold before the queries; a few padded keys.
      MixtureAttentionOptions o{.hard = hard,
                                .totals = true,
                                .causal = causal,
                                .causal_offset = S - T,
                                .key_padding = padding(1, S, {{0, S / 2}, {0, S - 1}})};
      check_against_composed(in, o, 1e-11);
      seed += 7;
    }
  for (bool hard : {false, true}) {
    CAPTURE(hard);
    const Inputs in = inputs(2, 2, 70, 133, 2, 8, 12, 17);
    MixtureAttentionOptions o{.hard = hard,
                              .totals = true,
                              .causal = true,
                              .causal_offset = 63,
                              .key_padding = padding(2, 133, {{0, 5}, {1, 130}})};
    check_against_composed(to32(in), o, 3e-5);
  }
}

TEST_CASE("mixture_attention hard-E: a tie goes to the first component, as in mixture_softmax") {
  // Every component of every key equal: only component 0 gets gradient and responsibility.
  const int64_t B = 2, H = 2, T = 5, S = 7, M = 3, P = 4;
  Inputs in = inputs(B, H, T, S, 1, P, 3, 80);
  in.k = detach(contiguous(expand(in.k, {B, H, M, S, P}))).set_requires_grad(true);
  in.bias = detach(contiguous(expand(in.bias, {B, H, M, S}))).set_requires_grad(true);
  MixtureAttentionOptions o{.hard = true, .totals = true, .causal = true, .causal_offset = 1};
  check_against_composed(in, o, 1e-12);
  Tensor k = detach(in.k).set_requires_grad(true);
  MixtureAttention y = mixture_attention(in.q, k, in.bias, in.v, o);
  backward(sum(y.out));
  check_close(narrow(k.grad(), 2, 1, 2), std::vector<double>(size_t(B * H * 2 * S * P), 0.0), 0, 0);
  check_close(narrow(y.totals, 2, 1, 2), std::vector<double>(size_t(B * H * 2), 0.0), 0, 0);
}

TEST_CASE("mixture_attention: dropout draws dropout()'s mask and advances the generator as much") {
  const Inputs in = inputs(2, 3, 70, 133, 2, 4, 5, 21);
  for (double p : {0.1, 0.5, 1.0})
    for (bool causal : {false, true})
      for (bool hard : {false, true}) {
        CAPTURE(p);
        CAPTURE(causal);
        CAPTURE(hard);
        MixtureAttentionOptions o{
            .hard = hard, .causal = causal, .causal_offset = 60, .dropout_p = p, .training = true};
        check_against_composed(in, o, 1e-11, 1234);
        // The generator moves as dropout() moves it.
        Generator g1(5), g2(5);
        g1.reserve(3);
        g2.reserve(3);
        o.gen = &g1;
        mixture_attention(detach(in.q), detach(in.k), detach(in.bias), detach(in.v), o);
        dropout(ones({2, 3, 70, 133}, {.dtype = kFloat64}), p, true, &g2);
        CHECK(g1.offset() == g2.offset());
      }
  check_against_composed(to32(in), {.causal = true, .dropout_p = 0.3, .training = true}, 3e-5, 99);
  // Not training, or p = 0: nothing is drawn.
  Generator g(9);
  mixture_attention(in.q, in.k, in.bias, in.v, {.dropout_p = 0.5, .training = false, .gen = &g});
  mixture_attention(in.q, in.k, in.bias, in.v, {.dropout_p = 0.0, .training = true, .gen = &g});
  CHECK(g.offset() == 0);
  // The global generator when none is given.
  manual_seed(31);
  Tensor a = mixture_attention(in.q, in.k, in.bias, in.v, {.dropout_p = 0.3, .training = true}).out;
  manual_seed(31);
  Tensor b = composed(in.q, in.k, in.bias, in.v, {.dropout_p = 0.3, .training = true}).out;
  check_close(a, b, 1e-12, 1e-10);
}

TEST_CASE("mixture_attention soft-E totals equal the sums of mixture_softmax's responsibilities") {
  Tensor pad = padding(2, 80, {{0, 3}, {1, 0}, {1, 79}});
  for (int64_t M : {1, 2, 3})
    for (bool hard : {false, true}) {
      CAPTURE(M);
      CAPTURE(hard);
      const Inputs in = inputs(2, 2, 70, 80, M, 4, 3, 40 + uint64_t(M));
      MixtureAttentionOptions o{.hard = hard, .totals = true, .causal = true, .causal_offset = -3, .key_padding = pad};
      MixtureAttention got = mixture_attention(detach(in.q), detach(in.k), detach(in.bias), detach(in.v), o);
      check_close(got.totals, composed(detach(in.q), detach(in.k), detach(in.bias), detach(in.v), o).totals, 1e-10,
                  1e-12);
      // Σ_r of the totals counts the visible (i, j) pairs: γ sums to 1 over r.
      double visible = 0;
      for (int64_t b = 0; b < 2; ++b)
        for (int64_t i = 0; i < 70; ++i)
          for (int64_t j = 0; j < 80; ++j) visible += (j <= i - 3 && !pad.data<bool>()[b * 80 + j]) ? 1 : 0;
      check_close(sum(got.totals), std::vector<double>{2 * visible}, 1e-8, 1e-12);  // 2 heads
      // Not asked for: undefined; the output does not change.
      MixtureAttention plain =
          mixture_attention(detach(in.q), detach(in.k), detach(in.bias), detach(in.v),
                            {.hard = hard, .causal = true, .causal_offset = -3, .key_padding = pad});
      CHECK_FALSE(plain.totals.defined());
      check_close(plain.out, got.out, 0, 0);
    }
}

TEST_CASE("mixture_attention reads strided, permuted and broadcast (stride-0) inputs") {
  Tensor pad = padding(2, 7, {{0, 1}, {1, 6}});
  for (Layout l : all_layouts()) {
    CAPTURE(layout_name(l));
    check_against_composed(inputs(2, 3, 5, 7, 2, 4, 6, 1, l),
                           {.scale = 0.3, .totals = true, .causal = true, .causal_offset = 2, .key_padding = pad},
                           1e-12);
  }
  // Heads split from (B, T, h·p) as the modules do: rows with a stride of h·p, read in place.
  {
    Tensor x = lf({2, 5, 3 * 4}, 7), m = lf({2, 7, 3 * 6}, 8), kk = lf({2, 7, 2, 3, 4}, 9);
    Inputs in{transpose(view(x, {2, 5, 3, 4}), 1, 2), permute(kk, {0, 3, 2, 1, 4}), lf({2, 3, 2, 7}, 10),
              transpose(view(m, {2, 7, 3, 6}), 1, 2)};
    check_against_composed(in, {.causal = true, .causal_offset = 1}, 1e-12);
  }
  // A bias shared by the batch: (1, h, M, S), (M, S) and a stride-0 expand; keys and values expanded over heads.
  for (const Shape& bs : {Shape{1, 3, 2, 7}, Shape{2, 7}, Shape{3, 1, 7}}) {
    CAPTURE(bs);
    Inputs in = inputs(2, 3, 5, 7, 2, 4, 6, 30);
    in.bias = lf(bs, 31);
    check_against_composed(in, {.hard = bs.size() == 3, .totals = true, .key_padding = pad}, 1e-12);
  }
  Inputs in = inputs(2, 3, 5, 7, 2, 4, 6, 40);
  in.bias = expand(lf({2, 1, 2, 7}, 41), {2, 3, 2, 7});
  in.k = expand(lf({2, 1, 2, 7, 4}, 42), {2, 3, 2, 7, 4});
  in.v = expand(lf({1, 3, 7, 6}, 43), {2, 3, 7, 6});
  check_against_composed(in, {.causal = true}, 1e-12);
}

TEST_CASE("mixture_attention with sMGK-shaped keys k_jr = k_j − μ_r and MGK's bias: gradients reach k_j, μ, π") {
  const int64_t B = 2, h = 2, T = 6, S = 6, M = 3, p = 4;
  const double inv_s2 = 1.0 / std::sqrt(double(p));
  Tensor pad = padding(B, S, {{1, 2}});
  for (bool hard : {false, true}) {
    CAPTURE(hard);
    std::vector<std::vector<Tensor>> grads;
    std::vector<Tensor> outs;
    for (int pass = 0; pass < 2; ++pass) {
      Tensor q = lf({B, h, T, p}, 51), kj = lf({B, h, S, p}, 52), mu = lf({h, M, p}, 53), logits = lf({h, M}, 54),
             v = lf({B, h, S, p}, 55);
      Tensor kr = sub(unsqueeze(kj, 2), view(mu, {1, h, M, 1, p}));  // (B, h, M, S, p)
      Tensor bias = add(view(log_softmax(logits, -1), {1, h, M, 1}), mul(sum(mul(kr, kr), {-1}), -0.5 * inv_s2));
      MixtureAttentionOptions o{.scale = inv_s2, .hard = hard, .causal = true, .key_padding = pad};
      Tensor y = pass == 0 ? mixture_attention(q, kr, bias, v, o).out : composed(q, kr, bias, v, o).out;
      backward(sum(mul(y, y)));
      outs.push_back(y);
      grads.push_back({q.grad(), kj.grad(), mu.grad(), logits.grad(), v.grad()});
    }
    check_close(outs[0], outs[1], 1e-12, 1e-12);
    for (size_t i = 0; i < grads[0].size(); ++i) {
      CAPTURE(i);
      check_close(grads[0][i], grads[1][i], 1e-12, 1e-12);
    }
  }
}

TEST_CASE("mixture_attention gradchecks in float64 over layouts, masks, dropout, hard-E and broadcast bias") {
  Tensor pad = padding(2, 6, {{0, 2}, {1, 0}, {1, 1}});
  for (Layout l : all_layouts()) {
    CAPTURE(layout_name(l));
    Inputs in = inputs(2, 2, 4, 6, 2, 3, 5, 61, l);
    const std::vector<Tensor> all{in.q, in.k, in.bias, in.v};
    CHECK_GRADCHECK([](V t) { return mixture_attention(t[0], t[1], t[2], t[3]).out; }, all);
    CHECK_GRADCHECK(
        [&](V t) {
          return mixture_attention(t[0], t[1], t[2], t[3],
                                   {.scale = 0.7, .causal = true, .causal_offset = 1, .key_padding = pad})
              .out;
        },
        all);
    CHECK_GRADCHECK(
        [&](V t) {
          Generator gen(42);  // the same mask on every evaluation
          return mixture_attention(
                     t[0], t[1], t[2], t[3],
                     {.causal = true, .causal_offset = 2, .dropout_p = 0.3, .training = true, .gen = &gen})
              .out;
        },
        all);
    // Hard-E is piecewise smooth: random inputs sit away from the ties.
    CHECK_GRADCHECK(
        [&](V t) { return mixture_attention(t[0], t[1], t[2], t[3], {.hard = true, .key_padding = pad}).out; }, all);
  }
  // M = 3, a bias broadcast over the batch, one input wanting a gradient.
  Inputs in = inputs(1, 2, 3, 5, 3, 2, 3, 70);
  Tensor b1 = lf({2, 3, 5}, 71);
  CHECK_GRADCHECK([](V t) { return mixture_attention(t[0], t[1], t[2], t[3], {.causal = true}).out; },
                  {in.q, in.k, b1, in.v});
  Tensor qc = detach(in.q), vc = detach(in.v), bc = detach(in.bias);
  CHECK_GRADCHECK([&](V t) { return mixture_attention(qc, t[0], bc, vc).out; }, {in.k});
}

TEST_CASE("mixture_attention gradgradchecks: soft and hard, masks with a row that sees nothing, dropout") {
  const Tensor pad = padding(2, 4, {{0, 3}, {1, 0}});
  const std::vector<MixtureAttentionOptions> options = {
      {},
      {.hard = true, .causal = true, .key_padding = pad},
      {.scale = 0.7, .causal = true, .causal_offset = 1},
      {.key_padding = pad, .dropout_p = 0.4, .training = true},
  };
  const Inputs in = inputs(2, 1, 3, 4, 2, 2, 2, 91);
  gradgradcheck_attention(
      options, [](V a, const MixtureAttentionOptions& o) { return mixture_attention(a[0], a[1], a[2], a[3], o).out; },
      {in.q, in.k, lf({1, 1, 2, 4}, 95), in.v});  // bias broadcast over the batch
}

TEST_CASE("mixture_attention results do not depend on the thread count") {
  const Inputs in = to32(inputs(3, 2, 130, 150, 2, 8, 6, 90));
  auto run = [&] {
    Tensor q = detach(in.q).set_requires_grad(true), k = detach(in.k).set_requires_grad(true),
           b = detach(in.bias).set_requires_grad(true), v = detach(in.v).set_requires_grad(true);
    MixtureAttention y = mixture_attention(q, k, b, v, {.totals = true, .causal = true, .causal_offset = 20});
    backward(sum(mul(y.out, y.out)));
    std::vector<std::vector<float>> r{y.out.to_vector<float>(), y.totals.to_vector<float>()};
    for (const Tensor& t : {q, k, b, v}) r.push_back(t.grad().to_vector<float>());
    return r;
  };
  auto [one, many] = on_one_and_many_threads(run);
  CHECK(one == many);
}

TEST_CASE("mixture_attention reports bad shapes and dtypes") {
  Tensor q = rand({2, 3, 5, 4}), k = rand({2, 3, 2, 7, 4}), b = rand({2, 3, 2, 7}), v = rand({2, 3, 7, 6});
  CHECK_THROWS_WITH_AS(mixture_attention(rand({3, 5, 4}), k, b, v),
                       "mixture_attention: q must be (B, h, T, p), got float32 [3, 5, 4]", Error);
  CHECK_THROWS_WITH_AS(mixture_attention(q, rand({2, 3, 7, 4}), b, v),
                       "mixture_attention: k must be (2, 3, M, S, 4) to match q float32 [2, 3, 5, 4], got float32 "
                       "[2, 3, 7, 4]",
                       Error);
  CHECK_THROWS_WITH_AS(mixture_attention(q, zeros({2, 3, 0, 7, 4}), zeros({2, 3, 0, 7}), v),
                       "mixture_attention: k has no mixture components (M = 0), got float32 [2, 3, 0, 7, 4]", Error);
  CHECK_THROWS_WITH_AS(mixture_attention(q, k, rand({2, 3, 3, 7}), v),
                       "mixture_attention: bias float32 [2, 3, 3, 7] does not broadcast to (B, h, M, S) = [2, 3, 2, "
                       "7] of k float32 [2, 3, 2, 7, 4]",
                       Error);
  CHECK_THROWS_WITH_AS(mixture_attention(q, k, b, rand({2, 3, 6, 6})),
                       "mixture_attention: v must be (2, 3, 7, e) to match k float32 [2, 3, 2, 7, 4], got float32 "
                       "[2, 3, 6, 6]",
                       Error);
  CHECK_THROWS_WITH_AS(mixture_attention(q, k, to(b, kFloat64), v),
                       "mixture_attention: bias float64 [2, 3, 2, 7] has a different dtype from q float32 [2, 3, 5, 4]",
                       Error);
  CHECK_THROWS_WITH_AS(
      mixture_attention(zeros({2, 3, 5, 4}, {.dtype = kInt64}), k, b, v),
      doctest::Contains(
          "mixture_attention: expected a floating tensor (float32, float64, bfloat16, float16), got int64"),
      Error);
  CHECK_THROWS_WITH_AS(mixture_attention(q, k, b, v, {.key_padding = zeros({2, 7})}),
                       "mixture_attention: key_padding must be bool (2, 7), got float32 [2, 7]", Error);
  CHECK_THROWS_WITH_AS(mixture_attention(q, k, b, v, {.dropout_p = -0.5}),
                       "mixture_attention: dropout_p must be in [0, 1], got -0.5", Error);
}
