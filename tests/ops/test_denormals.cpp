// tests/ops/test_denormals.cpp — the flush-to-zero setting (core/denormals.h)
// reaches every thread that computes: the caller, oneTBB's workers (an
// elementwise op split into many tasks) and OpenBLAS's workers (one large
// GEMM), and it can be switched off and on again. Values are checked by
// their bits: with DAZ on, even `x == 0` reads a denormal x as zero.
#include <bit>
#include <cstdint>

#include "support/testing.h"

using namespace ks;

namespace {

constexpr float kDenormal = 1e-39f;  // below FLT_MIN (1.18e-38)

// Restores the thread count on scope exit.
struct ThreadCount {
  int saved = num_threads();
  explicit ThreadCount(int n) { set_num_threads(n); }
  ~ThreadCount() { set_num_threads(saved); }
};

// A tensor of denormals, made with flushing off (FTZ would turn the
// double-to-float conversion of the fill into 0).
Tensor denormals(const Shape& shape) {
  DenormalModeGuard keep(false);
  return full(shape, kDenormal);
}

// How many elements of a float32 tensor have exactly the bits of `want`.
int64_t count_bits(const Tensor& t, float want) {
  Tensor c = contiguous(t);
  const float* p = c.data<float>();
  int64_t n = 0;
  for (int64_t i = 0; i < c.numel(); ++i) n += std::bit_cast<uint32_t>(p[i]) == std::bit_cast<uint32_t>(want);
  return n;
}

}  // namespace

TEST_CASE("flush-to-zero is on by default unless KS_FLUSH_DENORMALS=0") {
  const char* env = std::getenv("KS_FLUSH_DENORMALS");
  CHECK(flush_denormals() == !(env && std::string(env) == "0"));
}

TEST_CASE("the denormal mode reaches oneTBB's workers") {
  ThreadCount threads(2);
  Tensor x = denormals({1 << 20});  // 32 tasks of the elementwise grain
  REQUIRE(count_bits(x, kDenormal) == x.numel());
  {
    DenormalModeGuard flush(true);
    CHECK(count_bits(mul(x, 1.0), 0.f) == x.numel());
  }
  {
    DenormalModeGuard keep(false);
    CHECK(count_bits(mul(x, 1.0), kDenormal) == x.numel());
  }
}

TEST_CASE("the denormal mode reaches OpenBLAS's workers, also after it changes") {
  ThreadCount threads(2);
  // One GEMM big enough for OpenBLAS to split over its threads: every
  // product reads a denormal, every exact sum (128 · 1e-39) is a normal float.
  Tensor a = denormals({512, 128});
  Tensor b = ones({128, 512});
  for (bool flush : {true, false, true}) {
    DenormalModeGuard mode(flush);
    Tensor c = matmul(a, b);  // (512, 512)
    if (flush)
      CHECK(count_bits(c, 0.f) == c.numel());
    else
      CHECK(count_bits(c, 0.f) == 0);
  }
}
