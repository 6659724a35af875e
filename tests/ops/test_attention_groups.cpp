// tests/ops/test_attention_groups.cpp — scaled_dot_product_attention with
// grouped-query keys and values (k, v with g heads dividing q's h: query head
// n reads key/value head n / (h / g)), with ALiBi's biases and with sliding
// windows (j > offset + i − window): forward
// against float64 loops that look K/V up per head and add −m_n·|offset + i − j|
// with the paper's slopes written out; values and gradients against the
// composed path with K/V repeated explicitly (so the gradients sum over the
// group); float32, the bf16 tile products (each bf16 path this CPU has,
// forced as KS_CPU_GEMM would), dropout, gradchecks, gradgradchecks
// (create_graph through ops/attention_in_ops.h), the few query rows that
// skip the packed bf16 kernel, and the shape error.
// Not here: the plain multi-head op (test_attention_op.cpp), the module
// (tests/nn/test_softmax_attention.cpp).
#include <cmath>
#include <limits>

#include "core/matmul_precision.h"
#include "ops/cpu/attention_bf16.h"
#include "ops/cpu/gemm/gemm.h"
#include "ops/gemm_paths.h"
#include "ops/ops_testing.h"
#include "support/testing.h"

using namespace ks;
using namespace ks::testing;
using V = const std::vector<Tensor>&;

namespace {

// ALiBi's slopes from the paper's code, written out: for 8 heads 2^-1 .. 2^-8;
// for 6 heads the 4 of a power of two (2^-2, 2^-4, 2^-6, 2^-8), then every
// other slope of 8 heads' sequence (2^-1, 2^-3).
std::vector<double> paper_slopes(int64_t h) {
  if (h == 8) return {0.5, 0.25, 0.125, 1.0 / 16, 1.0 / 32, 1.0 / 64, 1.0 / 128, 1.0 / 256};
  if (h == 6) return {0.25, 1.0 / 16, 1.0 / 64, 1.0 / 256, 0.5, 0.125};
  if (h == 4) return {0.25, 1.0 / 16, 1.0 / 64, 1.0 / 256};
  if (h == 2) return {1.0 / 16, 1.0 / 256};
  if (h == 3) return {1.0 / 16, 1.0 / 256, 0.25};  // c = 2: 2^-4, 2^-8; then 4's sequence, first odd one: 2^-2
  FAIL("no slopes written out for ", h, " heads");
  return {};
}

// k (B, g, S, x) repeated to (B, h, S, x), each head h / g times in a row: a copy, differentiable.
Tensor repeat_kv(const Tensor& k, int64_t h) {
  const int64_t B = k.size(0), g = k.size(1), S = k.size(2), x = k.size(3);
  return reshape(expand(unsqueeze(k, 2), {B, g, h / g, S, x}), {B, h, S, x});
}

// The ALiBi biases (1, h, T, S) from the written-out slopes.
Tensor bias_of(int64_t h, int64_t T, int64_t S, int64_t offset) {
  const std::vector<double> m = paper_slopes(h);
  std::vector<double> b;
  for (int64_t n = 0; n < h; ++n)
    for (int64_t i = 0; i < T; ++i)
      for (int64_t j = 0; j < S; ++j) b.push_back(-m[size_t(n)] * std::abs(double(offset + i - j)));
  return from_vector(b, {1, h, T, S});
}

// The composed path on repeated K/V: matmul → + ALiBi → masked_fill → softmax → dropout → matmul.
Tensor composed(const Tensor& q, const Tensor& k, const Tensor& v, const SdpaOptions& o) {
  const int64_t h = q.size(1), T = q.size(2), S = k.size(2);
  const double scale = o.scale > 0 ? o.scale : 1.0 / std::sqrt(double(q.size(3)));
  Tensor s = mul(matmul(q, transpose(repeat_kv(k, h), -1, -2)), scale);
  if (o.alibi) s = add(s, to(bias_of(h, T, S, o.causal_offset), s.dtype()));
  Tensor hidden =
      attention_hidden_mask(q.size(0), T, S, o.causal, o.causal_offset, o.window, o.key_padding, q.device());
  if (hidden.defined()) s = masked_fill(s, hidden, -INFINITY);
  return matmul(dropout(softmax(s, -1), o.dropout_p, o.training, o.gen), repeat_kv(v, h));
}

// out[b, n, i, :] by float64 loops: head n reads key/value head n / (h / g);
// ALiBi from the written-out slopes.
std::vector<double> reference(const Tensor& q, const Tensor& k, const Tensor& v, const SdpaOptions& o) {
  const int64_t B = q.size(0), H = q.size(1), T = q.size(2), P = q.size(3), G = k.size(1), S = k.size(2), E = v.size(3);
  const double scale = o.scale > 0 ? o.scale : 1.0 / std::sqrt(double(P));
  const std::vector<double> qv = q.to_vector<double>(), kv = k.to_vector<double>(), vv = v.to_vector<double>();
  const std::vector<double> pad = o.key_padding.defined() ? o.key_padding.to_vector<double>() : std::vector<double>();
  const std::vector<double> slopes = o.alibi ? paper_slopes(H) : std::vector<double>(size_t(H), 0.0);
  std::vector<double> out(size_t(B * H * T * E), 0.0), w(static_cast<size_t>(S));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t n = 0; n < H; ++n)
      for (int64_t i = 0; i < T; ++i) {
        const int64_t qh = b * H + n, kh = b * G + n / (H / G);
        double mx = -INFINITY;
        for (int64_t j = 0; j < S; ++j) {
          const bool masked = (o.causal && j > o.causal_offset + i) || (!pad.empty() && pad[size_t(b * S + j)] != 0) ||
                              (o.causal && o.window > 0 && j <= o.causal_offset + i - o.window);  // sliding window
          double s = 0;
          for (int64_t a = 0; a < P; ++a) s += qv[size_t((qh * T + i) * P + a)] * kv[size_t((kh * S + j) * P + a)];
          s = s * scale - slopes[size_t(n)] * std::abs(double(o.causal_offset + i - j));
          w[size_t(j)] = masked ? -INFINITY : s;
          mx = std::max(mx, w[size_t(j)]);
        }
        if (mx == -INFINITY) continue;
        double z = 0;
        for (int64_t j = 0; j < S; ++j) z += (w[size_t(j)] = std::exp(w[size_t(j)] - mx));
        for (int64_t j = 0; j < S; ++j)
          for (int64_t c = 0; c < E; ++c)
            out[size_t((qh * T + i) * E + c)] += w[size_t(j)] / z * vv[size_t((kh * S + j) * E + c)];
      }
  return out;
}

// Output and the gradients of q, k, v of sum(out ∘ w), fused or composed.
std::vector<Tensor> run(bool fused, const Tensor& q0, const Tensor& k0, const Tensor& v0, const SdpaOptions& o,
                        uint64_t seed = 3) {
  Tensor q = detach(q0).set_requires_grad(true), k = detach(k0).set_requires_grad(true),
         v = detach(v0).set_requires_grad(true);
  SdpaOptions oo = o;
  Generator gen(seed);
  if (o.training) oo.gen = &gen;
  Tensor y = fused ? scaled_dot_product_attention(q, k, v, oo) : composed(q, k, v, oo);
  Generator wg(77);
  backward(sum(mul(y, to(rand(y.sizes(), {.dtype = kFloat64}, &wg), y.dtype()))));  // the same weights in every dtype
  return {y, q.grad(), k.grad(), v.grad()};
}

void check_all_close(const std::vector<Tensor>& got, const std::vector<Tensor>& want, double tol) {
  for (size_t i = 0; i < got.size(); ++i) {
    CAPTURE(i);
    CHECK(got[i].sizes() == want[i].sizes());
    check_close(got[i], want[i], tol, tol);
  }
}

struct Case {
  int64_t h, g, T, S;
  SdpaOptions opt;
};

// h = 8 or 6 query heads over g = 1 (multi-query), 2, h key/value heads;
// causal with a cache offset, bidirectional, padding, dropout, with and
// without ALiBi; T and S across the CPU kernels' tiles (64 rows, 64/256 keys).
std::vector<Case> cases() {
  Tensor pad = padding(2, 70, {{0, 3}, {1, 0}, {1, 69}});
  std::vector<Case> out;
  for (bool alibi : {false, true}) {
    out.push_back({8, 2, 5, 7, {.causal = true, .causal_offset = 2, .alibi = alibi}});
    out.push_back({8, 1, 6, 6, {.causal = true, .alibi = alibi}});
    out.push_back({6, 3, 4, 9, {.alibi = alibi, .key_padding = padding(2, 9, {{0, 1}, {1, 8}})}});
    out.push_back({6, 2, 70, 70, {.causal = true, .alibi = alibi, .key_padding = pad}});
    out.push_back(
        {8, 4, 66, 70, {.causal = true, .causal_offset = 4, .alibi = alibi, .dropout_p = 0.2, .training = true}});
  }
  out.push_back({8, 8, 5, 7, {.causal = true, .causal_offset = 2, .alibi = true}});  // no groups, ALiBi alone
  // Sliding windows (Mistral's): within one tile; across the 256-key forward
  // tiles and 64-key backward tiles with a cache offset (whole tiles skipped)
  // and dropout; a decoding step's one query; a window wider than the keys.
  out.push_back({8, 2, 70, 70, {.causal = true, .window = 5, .key_padding = pad}});
  out.push_back(
      {6, 3, 66, 300, {.causal = true, .causal_offset = 234, .window = 100, .dropout_p = 0.2, .training = true}});
  out.push_back({8, 4, 1, 300, {.causal = true, .causal_offset = 299, .window = 64, .alibi = true}});
  out.push_back({8, 8, 9, 9, {.causal = true, .window = 50}});
  return out;
}

}  // namespace

TEST_CASE(
    "grouped-query attention and ALiBi: the fused op equals float64 loops and the composed path on repeated K/V") {
  for (const Case& c : cases()) {
    CAPTURE(c.h);
    CAPTURE(c.g);
    CAPTURE(c.T);
    CAPTURE(c.opt.alibi);
    CAPTURE(c.opt.causal);
    CAPTURE(c.opt.window);
    Tensor q = lf({2, c.h, c.T, 8}, 1), k = lf({2, c.g, c.S, 8}, 2), v = lf({2, c.g, c.S, 5}, 3);
    if (!c.opt.training)
      check_close(scaled_dot_product_attention(q, k, v, c.opt), reference(q, k, v, c.opt), 1e-12, 1e-10);
    // float64: values and gradients (dK, dV summed over each group) against the composed path.
    const std::vector<Tensor> want = run(false, q, k, v, c.opt);
    check_all_close(run(true, q, k, v, c.opt), want, 1e-11);
    // float32, the generic kernel (MatmulPrecision::Float32).
    MatmulPrecisionScope f32(MatmulPrecision::Float32);
    std::vector<Tensor> got32 = run(true, to(q, kFloat32), to(k, kFloat32), to(v, kFloat32), c.opt);
    for (Tensor& t : got32) t = to(t, kFloat64);
    check_all_close(got32, want, 1e-4);
  }
}

TEST_CASE("grouped-query attention and ALiBi: the bf16 tile products on every bf16 path this CPU has") {
  // Under MatmulPrecision::BFloat16 the float32 op multiplies bf16-rounded
  // tiles (the packed kernel of ops/cpu/attention_bf16.cpp); forced onto each
  // path this CPU can run, its results stay within bf16's rounding of the
  // float64 composed path (8-bit mantissas: ~1e-2 of the values' norm), where
  // a wrong key/value head or a wrong bias moves them by the norm itself.
  for_each_gemm_path(kAllGemmPaths, [&](CpuGemmPath) {
    for (const Case& c : cases()) {
      CAPTURE(c.h);
      CAPTURE(c.g);
      CAPTURE(c.T);
      CAPTURE(c.opt.alibi);
      Tensor q = lf({2, c.h, c.T, 8}, 1), k = lf({2, c.g, c.S, 8}, 2), v = lf({2, c.g, c.S, 5}, 3);
      const std::vector<Tensor> want = run(false, q, k, v, c.opt);
      MatmulPrecisionScope bf16(MatmulPrecision::BFloat16);
      const std::vector<Tensor> got = run(true, to(q, kFloat32), to(k, kFloat32), to(v, kFloat32), c.opt);
      for (size_t i = 0; i < got.size(); ++i) {
        CAPTURE(i);
        const std::vector<double> x = got[i].to_vector<double>(), y = want[i].to_vector<double>();
        double worst = 0, norm = 0;  // max |x − y|, max |y|
        for (size_t e = 0; e < x.size(); ++e) {
          worst = std::max(worst, std::fabs(x[e] - y[e]));
          norm = std::max(norm, std::fabs(y[e]));
        }
        CHECK(worst <= 2e-2 * norm);
      }
    }
  });
}

TEST_CASE("bf16 products: a decoding step's few query rows skip the packed kernel, a prompt's take it") {
  // Packing K and V into bf16 panels pays off over many query rows; for one
  // (a decoding step, over the whole cache every step) it made bf16 decoding
  // half as fast as float32. Below kPackedMinQueryRows rows per key/value head
  // (T · h/g) the float32 kernel runs, its tile products still bf16 GEMMs, so
  // its results stay within bf16's rounding of float32's.
  struct Shape {
    int64_t h, g, T;
    bool packed;
  };
  const std::vector<Shape> shapes = {{8, 4, 1, false}, {8, 8, 7, false}, {8, 1, 1, true}, {8, 8, 16, true}};
  for (const Shape& c : shapes) {
    CAPTURE(c.h);
    CAPTURE(c.g);
    CAPTURE(c.T);
    Tensor q = to(lf({1, c.h, c.T, 16}, 1), kFloat32), k = to(lf({1, c.g, 300, 16}, 2), kFloat32),
           v = to(lf({1, c.g, 300, 16}, 3), kFloat32);
    CHECK_FALSE(cpu::sdpa_bf16_applies(q, k));  // float32 products: never
    const SdpaOptions o{.causal = true, .causal_offset = 300 - c.T};
    const std::vector<Tensor> f32 = run(true, q, k, v, o);
    for_each_gemm_path(kAllGemmPaths, [&](CpuGemmPath) {
      MatmulPrecisionScope bf16(MatmulPrecision::BFloat16);
      const bool bf16_kernel = cpu_matmul_precision() == MatmulPrecision::BFloat16;
      CHECK(cpu::sdpa_bf16_applies(q, k) == (bf16_kernel && c.packed));
      const std::vector<Tensor> got = run(true, q, k, v, o);
      check_close(got[0], f32[0], 2e-2, 2e-2);
    });
  }
}

TEST_CASE("grouped-query attention and ALiBi gradcheck and gradgradcheck (create_graph through the composition)") {
  Tensor pad = padding(2, 5, {{0, 1}, {1, 0}});
  const std::vector<SdpaOptions> options = {
      {.causal = true, .causal_offset = 1, .alibi = true},
      {.alibi = true, .key_padding = pad},
      {.causal = true, .key_padding = pad, .dropout_p = 0.3, .training = true},
      {.causal = true, .causal_offset = 2, .window = 2, .alibi = true},  // a sliding window
  };
  for (int64_t g : {1, 2}) {
    CAPTURE(g);
    Tensor q = lf({2, 4, 3, 2}, 11), k = lf({2, g, 5, 2}, 12, Layout::Permuted), v = lf({2, g, 5, 3}, 13);
    for (const SdpaOptions& o : options) {
      CAPTURE(o.alibi);
      CHECK_GRADCHECK(
          [o](V t) {
            Generator gen(42);
            SdpaOptions with_gen = o;
            with_gen.gen = &gen;
            return scaled_dot_product_attention(t[0], t[1], t[2], with_gen);
          },
          {q, k, v});
    }
    gradgradcheck_attention(options,
                            [](V a, const SdpaOptions& o) { return scaled_dot_product_attention(a[0], a[1], a[2], o); },
                            {q, k, v});
  }
}

TEST_CASE("grouped-query attention: k's heads must divide q's") {
  Tensor q = rand({2, 6, 5, 4}), k = rand({2, 4, 7, 4}), v = rand({2, 4, 7, 3});
  CHECK_THROWS_WITH_AS(scaled_dot_product_attention(q, k, v),
                       "scaled_dot_product_attention: k has 4 heads, which do not divide q's 6 (each key/value head "
                       "serves an equal group of query heads), got k float32 [2, 4, 7, 4]",
                       Error);
  CHECK_THROWS_WITH_AS(scaled_dot_product_attention(q, rand({2, 3, 7, 4}), v),
                       "scaled_dot_product_attention: v must be (2, 3, 7, e) to match k float32 [2, 3, 7, 4], got "
                       "float32 [2, 4, 7, 3]",
                       Error);
}
