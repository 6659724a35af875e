// tests/ops/test_rope.cpp — rope: a loop reference of HF's rotate_half form in
// long double (offset, (T,) and (B, T) positions, θ, far positions in
// float32), the relative-position property, inverse ∘ rope = identity,
// gradchecks and gradgradchecks over layouts, errors.
#include <cmath>

#include "ops/ops_testing.h"
#include "ops/rope.h"
#include "support/testing.h"

using namespace ks;
using namespace ks::testing;

namespace {

using V = const std::vector<Tensor>&;

// HF's apply_rotary_pos_emb on x (rows of T positions × p), in long double:
// cos/sin of pos · θ^(-2i/p) repeated over both halves, x·cos + rotate_half(x)·sin,
// rotate_half(x) = (−x₂, x₁). pos(r, t): the position of row r's step t.
// freq(i): the frequency of pair i (θ^(-2i/p) unscaled).
template <class Pos, class Freq>
std::vector<double> rope_ref_freq(const std::vector<double>& x, int64_t rows_per_t, int64_t T, int64_t p, Freq freq,
                                  Pos pos) {
  std::vector<double> y(x.size());
  const int64_t half = p / 2, rows = int64_t(x.size()) / p;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t t = r % T;
    const long double position = pos(r / (rows_per_t * T), t);
    for (int64_t i = 0; i < half; ++i) {
      const long double inv_freq = freq(i);
      const long double c = std::cos(position * inv_freq), s = std::sin(position * inv_freq);
      const long double x1 = x[size_t(r * p + i)], x2 = x[size_t(r * p + i + half)];
      y[size_t(r * p + i)] = double(x1 * c - x2 * s);
      y[size_t(r * p + i + half)] = double(x2 * c + x1 * s);
    }
  }
  return y;
}

template <class Pos>
std::vector<double> rope_ref(const std::vector<double>& x, int64_t rows_per_t, int64_t T, int64_t p, double theta,
                             Pos pos) {
  return rope_ref_freq(
      x, rows_per_t, T, p,
      [&](int64_t i) { return 1.0L / std::pow((long double)theta, (long double)(2 * i) / (long double)p); }, pos);
}

// transformers' modeling_rope_utils.py, written out per frequency: inv_freq of
// pair i of head size p under rope_scaling (linear, llama3; dynamic's θ is
// the caller's).
long double hf_inv_freq(int64_t i, int64_t p, long double theta, const RopeScaling& s) {
  const long double f = 1.0L / std::pow(theta, (long double)(2 * i) / (long double)p);
  if (s.type == RopeScalingType::Linear) return f / s.factor;
  if (s.type != RopeScalingType::Llama3) return f;
  const long double pi = 3.14159265358979323846L;
  const long double low_wavelen = s.original_max / s.low_freq_factor,
                    high_wavelen = s.original_max / s.high_freq_factor;
  const long double wavelen = 2 * pi / f;
  long double out = wavelen > low_wavelen ? f / s.factor : f;  // inv_freq_llama
  const long double smooth = (s.original_max / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
  const bool medium = !(wavelen < high_wavelen) && !(wavelen > low_wavelen);
  if (medium) out = (1 - smooth) * out / s.factor + smooth * out;
  return out;
}

}  // namespace

TEST_CASE("rope matches HF's rotate_half reference: offset, positions (T,) and (B, T), theta") {
  Generator gen(5);
  for (DType dt : {kFloat64, kFloat32}) {
    CAPTURE(dt);
    const double tol = dt == kFloat64 ? 1e-13 : 2e-6;
    Tensor x = randn({2, 3, 5, 8}, {.dtype = dt}, &gen);  // (B, h, T, p)
    const auto xv = x.to_vector<double>();
    for (double theta : {10000.0, 500.0}) {
      CAPTURE(theta);
      check_close(rope(x, {.theta = theta}), rope_ref(xv, 3, 5, 8, theta, [](int64_t, int64_t t) { return t; }), tol,
                  tol);
      check_close(rope(x, {.theta = theta, .offset = 7}),
                  rope_ref(xv, 3, 5, 8, theta, [](int64_t, int64_t t) { return 7 + t; }), tol, tol);
      const std::vector<int64_t> pt{4, 0, -2, 9, 9};
      check_close(rope(x, {.theta = theta, .positions = from_vector(pt, {5})}),
                  rope_ref(xv, 3, 5, 8, theta, [&](int64_t, int64_t t) { return pt[size_t(t)]; }), tol, tol);
      const std::vector<int64_t> pbt{0, 1, 2, 3, 4, 3, 4, 5, 6, 7};
      check_close(rope(x, {.theta = theta, .positions = from_vector(pbt, {2, 5})}),
                  rope_ref(xv, 3, 5, 8, theta, [&](int64_t b, int64_t t) { return pbt[size_t(b * 5 + t)]; }), tol, tol);
    }
  }
  // A permuted input (the layout split_heads gives), a 2-D one, and MGK's (B, h, M, S, p) keys.
  Tensor base = randn({2, 5, 3, 6}, {.dtype = kFloat64}, &gen);
  Tensor perm = transpose(base, 1, 2);  // (2, 3, 5, 6), not contiguous
  check_close(rope(perm, {.offset = 2}),
              rope_ref(perm.to_vector<double>(), 3, 5, 6, 1e4, [](int64_t, int64_t t) { return 2 + t; }), 1e-13, 1e-13);
  Tensor flat = randn({4, 10}, {.dtype = kFloat64}, &gen);
  check_close(rope(flat, {.offset = 1}),
              rope_ref(flat.to_vector<double>(), 1, 4, 10, 1e4, [](int64_t, int64_t t) { return 1 + t; }), 1e-13,
              1e-13);
  Tensor mgk = randn({2, 3, 2, 4, 6}, {.dtype = kFloat64}, &gen);
  const std::vector<int64_t> pbt{5, 6, 7, 8, 0, 1, 2, 3};
  check_close(
      rope(mgk, {.positions = from_vector(pbt, {2, 4})}),
      rope_ref(mgk.to_vector<double>(), 6, 4, 6, 1e4, [&](int64_t b, int64_t t) { return pbt[size_t(b * 4 + t)]; }),
      1e-13, 1e-13);
}

TEST_CASE("rope_scaling linear, llama3 and dynamic match transformers' frequencies") {
  Generator gen(11);
  constexpr int64_t p = 16, T = 6;
  Tensor x = randn({2, 3, T, p}, {.dtype = kFloat64}, &gen);  // (B, h, T, p)
  const auto xv = x.to_vector<double>();
  const auto at = [](int64_t offset) { return [offset](int64_t, int64_t t) { return offset + t; }; };
  // llama3 at original 64: pair 0 (wavelength 6.3) is kept, pairs 1–2 (20, 63) interpolated, 3+ divided.
  const RopeScaling llama3{.type = RopeScalingType::Llama3, .factor = 8, .original_max = 64};
  const RopeScaling linear{.type = RopeScalingType::Linear, .factor = 4};
  for (const RopeScaling& s : {llama3, linear}) {
    CAPTURE(rope_scaling_name(s.type));
    const auto freq = [&](int64_t i) { return hf_inv_freq(i, p, 10000, s); };
    check_close(rope(x, {.scaling = s, .offset = 100}), rope_ref_freq(xv, 3, T, p, freq, at(100)), 1e-12, 1e-12);
    // The backward turns back by the same scaled angles.
    check_close(rope(rope(x, {.scaling = s, .offset = 3}), {.scaling = s, .offset = 3, .inverse = true}), x, 1e-12,
                1e-12);
  }
  // The llama3 frequencies differ from the plain ones exactly where HF's do.
  CHECK(hf_inv_freq(0, p, 10000, llama3) == hf_inv_freq(0, p, 10000, {}));
  CHECK(hf_inv_freq(1, p, 10000, llama3) < hf_inv_freq(1, p, 10000, {}));
  CHECK(hf_inv_freq(5, p, 10000, llama3) == hf_inv_freq(5, p, 10000, {}) / 8);

  // dynamic: θ grows once the call's last position L − 1 reaches original_max.
  const RopeScaling dynamic{.type = RopeScalingType::Dynamic, .factor = 2, .original_max = 4};
  const auto grown = [&](int64_t len) {
    const long double base = 10000.0L * std::pow(2.0L * len / 4 - 1, (long double)p / (p - 2));
    return [base, dim = (long double)p](int64_t i) { return 1.0L / std::pow(base, (long double)(2 * i) / dim); };
  };
  check_close(rope(x, {.scaling = dynamic}), rope_ref_freq(xv, 3, T, p, grown(T), at(0)), 1e-12, 1e-12);
  check_close(rope(x, {.scaling = dynamic, .offset = 10}), rope_ref_freq(xv, 3, T, p, grown(T + 10), at(10)), 1e-12,
              1e-12);
  Tensor short_x = randn({1, 2, 3, p}, {.dtype = kFloat64}, &gen);  // positions 0..2: within the original context
  check_close(rope(short_x, {.scaling = dynamic}), rope_ref(short_x.to_vector<double>(), 2, 3, p, 10000, at(0)), 1e-12,
              1e-12);
  const std::vector<int64_t> pos{0, 9, 2, 3, 1, 5};  // positions: the largest decides
  check_close(rope(x, {.scaling = dynamic, .positions = from_vector(pos, {T})}),
              rope_ref_freq(xv, 3, T, p, grown(10), [&](int64_t, int64_t t) { return pos[size_t(t)]; }), 1e-12, 1e-12);

  CHECK_THROWS_WITH_AS(rope(x, {.scaling = {.type = RopeScalingType::Linear, .factor = 0}}),
                       doctest::Contains("factor: must be > 0"), Error);
  CHECK_THROWS_WITH_AS(rope(x, {.scaling = {.type = RopeScalingType::Llama3,
                                            .factor = 8,
                                            .low_freq_factor = 4,
                                            .high_freq_factor = 1,
                                            .original_max = 64}}),
                       doctest::Contains("low_freq_factor < high_freq_factor"), Error);
  CHECK_THROWS_WITH_AS(rope(x, {.scaling = {.type = RopeScalingType::Dynamic, .factor = 2}}),
                       doctest::Contains("original_max_position_embeddings"), Error);
  CHECK_THROWS_WITH_AS(rope(randn({1, 1, 2, 2}), {.scaling = dynamic}), doctest::Contains("head size must exceed 2"),
                       Error);
}

TEST_CASE("rope in float32 at far positions keeps float32 accuracy (angles in float64)") {
  Generator gen(6);
  Tensor x = randn({1, 2, 3, 64}, {}, &gen);
  Tensor y = rope(x, {.offset = 200000});
  check_close(y, rope_ref(x.to_vector<double>(), 2, 3, 64, 1e4, [](int64_t, int64_t t) { return 200000 + t; }), 2e-6,
              2e-6);
}

TEST_CASE("rope: scores depend on the distance only, and inverse undoes it") {
  Generator gen(7);
  Tensor q = randn({1, 1, 1, 16}, {.dtype = kFloat64}, &gen), k = randn({1, 1, 1, 16}, {.dtype = kFloat64}, &gen);
  auto score = [&](int64_t m, int64_t n) { return sum(mul(rope(q, {.offset = m}), rope(k, {.offset = n}))).item(); };
  CHECK(score(3, 1) == doctest::Approx(score(103, 101)).epsilon(1e-12));
  CHECK(score(0, 5) == doctest::Approx(score(40, 45)).epsilon(1e-12));
  CHECK(score(3, 1) != doctest::Approx(score(3, 2)).epsilon(1e-6));
  Tensor x = randn({2, 4, 8}, {.dtype = kFloat64}, &gen);
  check_close(rope(rope(x, {.offset = 9}), {.offset = 9, .inverse = true}), x, 1e-14, 1e-14);
}

TEST_CASE("rope gradchecks and gradgradchecks over layouts, with offsets and positions") {
  const Tensor pos = from_vector(std::vector<int64_t>{3, 1, 4}, {3});
  check_grads_over_layouts([](V a) { return rope(a[0], {.offset = 2}); }, {{2, 3, 4}}, 11, -1, 1);
  check_grads_over_layouts([pos](V a) { return rope(a[0], {.theta = 50, .positions = pos}); }, {{2, 3, 6}}, 12, -1, 1);
  // Second derivatives that are not zero: rope(x)·x, and rope of a product.
  check_grads_over_layouts([](V a) { return mul(rope(a[0], {.offset = 5}), a[0]); }, {{2, 3, 4}}, 13, -1, 1);
  check_grads_over_layouts(
      [](V a) { return rope(mul(a[0], a[1]), {.inverse = true}); }, {{2, 3, 4}, {2, 3, 4}}, 14, -1,
      1);  // rope_scaling: the backward turns back by the same scaled angles (dynamic's grown θ included).
  const RopeScaling llama3{.type = RopeScalingType::Llama3, .factor = 8, .original_max = 16};
  const RopeScaling dynamic{.type = RopeScalingType::Dynamic, .factor = 2, .original_max = 2};
  check_grads_over_layouts([llama3](V a) { return rope(a[0], {.scaling = llama3, .offset = 4}); }, {{2, 3, 8}}, 15, -1,
                           1);
  check_grads_over_layouts([dynamic](V a) { return mul(rope(a[0], {.scaling = dynamic}), a[0]); }, {{2, 3, 8}}, 16, -1,
                           1);
}

TEST_CASE("rope errors name the op and the problem") {
  CHECK_THROWS_WITH_AS(rope(zeros({2, 3, 5})), doctest::Contains("rope: the last dim (the head size) must be even"),
                       Error);
  CHECK_THROWS_WITH_AS(rope(zeros({2, 4}), {.theta = 0}), doctest::Contains("rope: theta must be > 0"), Error);
  CHECK_THROWS_WITH_AS(rope(zeros({4}, {.dtype = kInt64})), doctest::Contains("rope: expected a floating tensor"),
                       Error);
  CHECK_THROWS_WITH_AS(rope(zeros({2, 3, 4}), {.positions = from_vector(std::vector<int64_t>{0, 1}, {2})}),
                       doctest::Contains("rope: positions must be (T,) or (B, T) with T = 3, B = 2"), Error);
  CHECK_THROWS_WITH_AS(rope(zeros({2, 3, 4}), {.positions = zeros({3})}),
                       doctest::Contains("rope: positions must be int64"), Error);
}
