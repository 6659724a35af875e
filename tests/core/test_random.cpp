// tests/core/test_random.cpp — Philox known answers, reproducibility,
// independence from the thread count, rough distribution checks, and the
// bulk Bernoulli draws (random_bulk.h) against the scalar stream.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "core/cpu_features.h"
#include "core/factory.h"
#include "core/parallel.h"
#include "core/random_bulk.h"
#include "core/random_values.h"

using namespace ks;

TEST_CASE("philox4x32-10 matches the Random123 known-answer vectors") {
  auto z = philox4x32(0, 0, 0);
  CHECK(z == std::array<uint32_t, 4>{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u});
  auto f = philox4x32(0xffffffffffffffffull, 0xffffffffffffffffull, 0xffffffffffffffffull);
  CHECK(f == std::array<uint32_t, 4>{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu});
  auto pi = philox4x32(0x299f31d0a4093822ull, 0x0370734413198a2eull, 0x85a308d3243f6a88ull);
  CHECK(pi == std::array<uint32_t, 4>{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u});
}

TEST_CASE("seeded draws repeat, and do not depend on the thread count") {
  manual_seed(42);
  auto a = randn({100001}).to_vector<float>();
  auto a2 = randn({10}).to_vector<float>();
  set_num_threads(1);
  manual_seed(42);
  auto b = randn({100001}).to_vector<float>();
  set_num_threads(2);
  CHECK(a == b);
  CHECK(a2 != std::vector<float>(a.begin(), a.begin() + 10));  // the offset advanced
}

TEST_CASE("distributions have the right moments") {
  manual_seed(1);
  auto n = randn({200000}, {.dtype = kFloat64}).to_vector<double>();
  double m = 0, v = 0;
  for (double x : n) m += x;
  m /= double(n.size());
  for (double x : n) v += (x - m) * (x - m);
  v /= double(n.size());
  CHECK(std::fabs(m) < 0.01);
  CHECK(std::fabs(v - 1) < 0.02);
  auto u = rand({100000}).to_vector<float>();
  double mu = 0;
  for (float x : u) {
    CHECK(x >= 0.0f);
    CHECK(x < 1.0f);
    mu += x;
  }
  CHECK(std::fabs(mu / 100000 - 0.5) < 0.01);
  auto r = randint(3, 7, {10000}, {.dtype = kInt64}).to_vector<int64_t>();
  int counts[4] = {};
  for (auto x : r) {
    REQUIRE(x >= 3);
    REQUIRE(x < 7);
    counts[x - 3]++;
  }
  for (int c : counts) CHECK(std::abs(c - 2500) < 200);
  auto b = bernoulli({10000}, 0.3).to_vector<float>();
  double s = 0;
  for (float x : b) s += x;
  CHECK(std::fabs(s / 10000 - 0.3) < 0.02);
  CHECK_THROWS_AS(bernoulli({2}, 1.5), Error);
}

TEST_CASE("bernoulli_draws equals the scalar stream: any start, length, counter carry and threshold") {
  if (!cpu_features().avx512)
    MESSAGE("this CPU has no AVX-512: bernoulli_draws runs the scalar path, so only that path is compared");
  const uint64_t seed = 0x0123456789abcdefull;
  auto check_range = [&](uint64_t first_block, uint64_t idx0, int64_t n, double p) {
    CAPTURE(first_block);
    CAPTURE(idx0);
    CAPTURE(n);
    CAPTURE(p);
    std::vector<char> fast(size_t(n) + 1, 2), want(size_t(n) + 1, 2);  // 2: untouched; [n] must stay so
    bernoulli_draws(reinterpret_cast<bool*>(fast.data()), n, seed, first_block, idx0, p);
    for (int64_t c = 0; c < n; ++c) want[size_t(c)] = bernoulli_element(seed, first_block, idx0 + uint64_t(c), p);
    CHECK(fast == want);
  };
  for (uint64_t first_block : {0ull, 0xfffffff9ull, 0x1234567890ull})  // the second carries into the high word
    for (uint64_t idx0 : {0ull, 1ull, 3ull, 6ull, 61ull})
      for (int64_t n : {0, 1, 5, 63, 64, 65, 130, 1000})
        for (double p : {0.0, 1e-12, 0.1, 0.5, 0.7, 0.9, 1.0 - 1e-16, 1.0}) check_range(first_block, idx0, n, p);

  // A threshold exactly at a draw's 53-bit value u: kept for p = (u + 1)·2^-53, not for p = u·2^-53.
  uint32_t w[4];
  philox4x32_10(seed, 0, 40, w);  // draw 0 of block 40
  const uint64_t u = (uint64_t(w[0]) << 32 | w[1]) >> 11;
  for (uint64_t t : {u, u + 1}) {
    const double p = std::ldexp(double(t), -53);
    bool kept[256];
    bernoulli_draws(kept, 256, seed, 0, 160, p);  // draw 160 is draw 0 of block 40
    CHECK(kept[0] == (t == u + 1));
    for (int c = 0; c < 256; ++c) CHECK(kept[c] == bernoulli_element(seed, 0, 160 + uint64_t(c), p));
  }
}
