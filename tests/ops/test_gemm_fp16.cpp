// tests/ops/test_gemm_fp16.cpp — MatmulPrecision::Float16 on the CPU
// (core/matmul_precision.h, train.precision "fp16"), an emulation: every
// operand is rounded exactly as ks::Float16 (core/dtype.h) rounds — nearest
// even, fp16 subnormals, values from 65520 up become inf — and the float32
// GEMM multiplies the rounded values. So the door's result equals, bit for
// bit, the float32 GEMM of operands rounded by the half conversion, in every
// layout, with alpha, beta and a bias row, threaded, and on the few-row
// kernel; and an operand beyond fp16's range gives an inf the loss scaler
// catches (tests/train/test_loss_scaling.cpp).
// Not here: the CUDA fp16 GEMM (tests/cuda/test_precision.cpp), the loss scaler.
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/matmul_precision.h"
#include "ops/cpu/gemm/gemm.h"
#include "support/testing.h"

using namespace ks;
using namespace ks::testing;

namespace {

float fp16_rounded(float x) { return float(Float16(x)); }

uint32_t bits_of(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}

// Values across fp16's whole range and beyond its edges: normals, subnormals
// (below 2^-14), values that flush to 0 (below 2^-25), exact halfway cases of
// both, and the largest finite half (65504) and its neighbours.
std::vector<float> edge_values() {
  std::vector<float> v = {0.f,
                          -0.f,
                          1.f,
                          -1.f,
                          65504.f,
                          65519.f,  // rounds down to 65504
                          -65519.f,
                          std::ldexp(1.f, -14),                         // the smallest normal half
                          std::ldexp(1.f, -24),                         // the smallest subnormal half
                          std::ldexp(1.f, -25),                         // halfway to it: ties to even, 0
                          std::ldexp(1.5f, -25),                        // above halfway: 2^-24
                          std::ldexp(3.f, -25),                         // 1.5 subnormal steps: ties to 2
                          std::ldexp(1.f, -26),                         // flushes to 0
                          1.f + std::ldexp(1.f, -11),                   // halfway between 1 and its successor
                          1.f + std::ldexp(3.f, -11),                   // halfway, odd below: rounds up
                          std::ldexp(1.f, -15) + std::ldexp(1.f, -25),  // a subnormal's halfway case
                          0.1f,
                          -3.14159f,
                          1234.567f};
  Generator g(11);
  const std::vector<float> r = randn({200}, {}, &g).to_vector<float>();
  for (size_t i = 0; i < r.size(); ++i) v.push_back(r[i] * std::ldexp(1.f, int(i % 44) - 30));  // 2^-30 .. 2^13
  return v;
}

// The door's C for g, under `p`.
std::vector<float> run(cpu::Gemm<float> g, std::vector<float> c, MatmulPrecision p) {
  g.c = c.data();
  g.precision = p;
  cpu::gemm(g);
  return c;
}

std::vector<float> rounded(const std::vector<float>& x) {
  std::vector<float> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) out[i] = fp16_rounded(x[i]);
  return out;
}

std::vector<float> random_values(int64_t n, uint64_t seed, float scale) {
  Generator g(seed);
  std::vector<float> v = randn({n}, {}, &g).to_vector<float>();
  for (float& x : v) x *= scale;
  return v;
}

}  // namespace

TEST_CASE("fp16 GEMM (CPU): the config word, and the CPU runs fp16 as fp16 whatever its bf16 path") {
  CHECK(parse_matmul_precision("fp16", "x") == MatmulPrecision::Float16);
  CHECK(std::string(matmul_precision_name(MatmulPrecision::Float16)) == "fp16");
  CHECK(cpu_matmul_precision(MatmulPrecision::Float16) == MatmulPrecision::Float16);
  CHECK(parse_matmul_precision("auto", "x") == MatmulPrecision::BFloat16);  // auto never picks fp16
}

TEST_CASE("fp16 GEMM (CPU): each operand is rounded as the half conversion rounds, subnormals and halfway cases too") {
  // C = A · I: every result is one operand value times 1 plus exact zeros, so C is round(A) itself.
  const std::vector<float> values = edge_values();
  const int64_t k = 64, m = (int64_t(values.size()) + k - 1) / k;
  std::vector<float> a(size_t(m * k), 0.f), eye(size_t(k * k), 0.f);
  std::copy(values.begin(), values.end(), a.begin());
  for (int64_t i = 0; i < k; ++i) eye[size_t(i * k + i)] = 1.f;
  const cpu::Gemm<float> g{.m = m, .n = k, .k = k, .a = {a.data(), k}, .b = {eye.data(), k}, .ldc = k};
  const std::vector<float> c = run(g, std::vector<float>(size_t(m * k)), MatmulPrecision::Float16);
  for (size_t i = 0; i < a.size(); ++i) {
    CAPTURE(i);
    CAPTURE(a[i]);
    // +0 for -0: a sum of a -0 product with +0 products is +0, the same in the float32 reference.
    const float want = fp16_rounded(a[i]) + 0.f;
    CHECK(bits_of(c[i]) == bits_of(want));
  }
  // The rounding happened: a value with more than fp16's 11 bits comes back changed.
  CHECK(c[size_t(16)] != a[16]);  // 0.1
}

TEST_CASE("fp16 GEMM (CPU): bit for bit the float32 GEMM of half-rounded operands, in every layout") {
  struct Shape {
    int64_t m, n, k;
    bool ta, tb, threaded;
    float alpha, beta;
    bool bias;
  };
  const Shape shapes[] = {
      {17, 23, 31, false, false, false, 1.f, 0.f, false},  {17, 23, 31, true, false, false, 1.f, 0.f, false},
      {17, 23, 31, false, true, false, 0.5f, 1.f, false},  {17, 23, 31, true, true, false, 2.f, -1.f, false},
      {40, 30, 20, false, true, false, 1.f, 0.f, true},    {1, 70, 33, false, true, false, 1.f, 0.f, false},  // one row
      {4, 300, 256, false, true, true, 1.f, 0.f, false},    // the few-row kernel (B 76,800 values)
      {300, 260, 150, false, false, true, 1.f, 0.f, true},  // threaded bands
  };
  for (const Shape& s : shapes) {
    CAPTURE(s.m);
    CAPTURE(s.n);
    CAPTURE(s.k);
    CAPTURE(s.ta);
    CAPTURE(s.tb);
    // Values up to ~2^12 and down to subnormals' range, so that both ends of fp16 are exercised.
    std::vector<float> a = random_values(s.m * s.k, 1 + uint64_t(s.m), 300.f);
    std::vector<float> b = random_values(s.k * s.n, 2 + uint64_t(s.n), 1e-5f);
    std::vector<float> bias = random_values(s.n, 3, 1.f);
    const std::vector<float> c0 = random_values(s.m * s.n, 4, 1.f);
    cpu::Gemm<float> g{.m = s.m,
                       .n = s.n,
                       .k = s.k,
                       .alpha = s.alpha,
                       .a = {nullptr, s.ta ? s.m : s.k, s.ta},
                       .b = {nullptr, s.tb ? s.k : s.n, s.tb},
                       .beta = s.beta,
                       .ldc = s.n,
                       .row_bias = s.bias ? bias.data() : nullptr,
                       .threaded = s.threaded};
    g.a.data = a.data();
    g.b.data = b.data();
    const std::vector<float> got = run(g, c0, MatmulPrecision::Float16);
    const std::vector<float> ra = rounded(a), rb = rounded(b);
    g.a.data = ra.data();
    g.b.data = rb.data();
    const std::vector<float> want = run(g, c0, MatmulPrecision::Float32);
    const std::vector<float> plain = [&] {
      g.a.data = a.data();
      g.b.data = b.data();
      return run(g, c0, MatmulPrecision::Float32);
    }();
    bool same = true, differs_from_float32 = false;
    for (size_t i = 0; i < got.size(); ++i) {
      same = same && bits_of(got[i]) == bits_of(want[i]);
      differs_from_float32 = differs_from_float32 || got[i] != plain[i];
    }
    CHECK(same);
    CHECK(differs_from_float32);
  }
}

TEST_CASE(
    "fp16 GEMM (CPU): matmul under fp16 equals matmul of tensors rounded through kFloat16, and float64 ignores it") {
  Generator g(21);
  const Tensor a = mul(randn({3, 20, 40}, {}, &g), 100.0), b_stored = randn({3, 30, 40}, {}, &g);
  const Tensor b = transpose(b_stored, -1, -2);  // read transposed, as linear reads its weight
  Tensor got;
  {
    MatmulPrecisionScope fp16(MatmulPrecision::Float16);
    got = matmul(a, b);
  }
  // The same layouts, rounded by the dtype conversion.
  const Tensor want = matmul(to(to(a, kFloat16), kFloat32), transpose(to(to(b_stored, kFloat16), kFloat32), -1, -2));
  CHECK(got.to_vector<float>() == want.to_vector<float>());
  CHECK(got.to_vector<float>() != matmul(a, b).to_vector<float>());
  const Tensor a64 = to(a, kFloat64), b64 = to(b, kFloat64);
  MatmulPrecisionScope fp16(MatmulPrecision::Float16);
  const Tensor c64 = matmul(a64, b64);
  MatmulPrecisionScope f32(MatmulPrecision::Float32);
  CHECK(c64.to_vector<double>() == matmul(a64, b64).to_vector<double>());
}

TEST_CASE("fp16 GEMM (CPU): an operand beyond fp16's range becomes inf, so the product does") {
  // 65519 still rounds to 65504; 65520 and up overflow, as an fp16 GEMM's would.
  for (float x : {65520.f, 70000.f, 1e5f, -1e6f}) {
    CAPTURE(x);
    std::vector<float> a = {x, 1.f}, b = {1.f, 0.5f};
    const cpu::Gemm<float> g{.m = 1, .n = 1, .k = 2, .a = {a.data(), 2}, .b = {b.data(), 1}, .ldc = 1};
    const float c = run(g, {0.f}, MatmulPrecision::Float16)[0];
    CHECK(std::isinf(c));
    CHECK((c < 0) == (x < 0));
    CHECK(std::isfinite(run(g, {0.f}, MatmulPrecision::Float32)[0]));
  }
  std::vector<float> a = {65519.f}, b = {1.f};
  const cpu::Gemm<float> g{.m = 1, .n = 1, .k = 1, .a = {a.data(), 1}, .b = {b.data(), 1}, .ldc = 1};
  CHECK(run(g, {0.f}, MatmulPrecision::Float16)[0] == 65504.f);
}
