// tests/core/test_copy_cast.cpp — the register loops of contiguous float32 <->
// bfloat16 casts (core/copy.h): bit for bit BFloat16's scalar rounding
// (nearest even, NaN to 0x7fc0, infinities, signed zeros, subnormals, the
// largest finite values that round up to infinity) and its widening, on the
// 256-bit loop and, where the CPU has it, the 512-bit one; and copy_ (to())
// on contiguous runs of every length against the scalar conversion. A CPU
// without AVX2 or AVX-512 skips what it lacks, saying so.
// Not here: strided copies (scalar, test_tensor.cpp).
#include <cstring>
#include <vector>

#include "core/copy.h"
#include "core/cpu_features.h"
#include "core/factory.h"
#include "support/testing.h"

using namespace ks;

namespace {

float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// The rounding's hard cases, then pseudo-random bit patterns of every exponent.
std::vector<float> hard_floats() {
  std::vector<float> v;
  for (uint32_t sign : {0u, 0x80000000u})
    for (uint32_t u : {0x00000000u, 0x00000001u, 0x00007fffu, 0x00008000u, 0x00018000u, 0x007fffffu, 0x00800000u,
                       0x3f800000u, 0x3f808000u, 0x3f818000u, 0x3f807fffu, 0x3f808001u, 0x7f7fffffu, 0x7f7f8000u,
                       0x7f7f7fffu, 0x7f800000u, 0x7f800001u, 0x7fc00000u, 0x7fffffffu, 0x7fbfffffu})
      v.push_back(from_bits(sign | u));
  uint32_t s = 12345u;
  for (int i = 0; i < 4000; ++i) {
    s = s * 1664525u + 1013904223u;
    v.push_back(from_bits(s));
  }
  return v;
}

uint16_t scalar_bits(float f) { return BFloat16(f).bits; }

}  // namespace

TEST_CASE("float32 -> bfloat16 register loops round as BFloat16 does, bit for bit") {
  const std::vector<float> x = hard_floats();
  const int64_t n = int64_t(x.size());
  for (CastIsa isa : {CastIsa::Avx2, CastIsa::Avx512}) {
    const bool has = isa == CastIsa::Avx512 ? cpu_features().avx512 : cpu_features().avx2;
    const char* name = isa == CastIsa::Avx512 ? "AVX-512" : "AVX2";
    CAPTURE(std::string(name));
    std::vector<uint16_t> got(x.size(), 0xdead);
    const int64_t done = round_to_bf16_run(x.data(), got.data(), n, isa);
    if (!has) {
      CHECK(done == 0);
      MESSAGE("skipped the ", std::string(name), " loop: this process runs ", cpu_isa_report(cpu_features()));
      continue;
    }
    CHECK(done == n / 16 * 16);
    for (int64_t i = 0; i < done; ++i) REQUIRE_MESSAGE(got[size_t(i)] == scalar_bits(x[size_t(i)]), "element ", i);
    CHECK(got[size_t(done)] == 0xdead);  // nothing past what it reports
  }
}

TEST_CASE("bfloat16 -> float32 register loop widens every bit pattern exactly") {
  std::vector<uint16_t> all(65536);
  for (uint32_t b = 0; b < 65536; ++b) all[b] = uint16_t(b);
  std::vector<float> got(all.size());
  const int64_t done = widen_bf16_run(all.data(), got.data(), int64_t(all.size()));
  if (!cpu_features().avx2) {
    CHECK(done == 0);
    MESSAGE("skipped: this CPU has no AVX2");
    return;
  }
  CHECK(done == 65536);
  for (uint32_t b = 0; b < 65536; ++b) {
    uint32_t u;
    std::memcpy(&u, &got[b], 4);
    REQUIRE(u == b << 16);
  }
}

TEST_CASE("to(bfloat16) and back on contiguous runs of every length match the scalar conversion") {
  const std::vector<float> x = hard_floats();
  for (int64_t len : std::vector<int64_t>{1, 7, 15, 16, 17, 31, 33, 100, int64_t(x.size())}) {
    CAPTURE(len);
    Tensor t = from_vector(std::vector<float>(x.begin(), x.begin() + len), {len});
    Tensor b = to_raw(t, Device::cpu(), kBFloat16);
    Tensor back = to_raw(b, Device::cpu(), kFloat32);
    const uint16_t* bits = static_cast<const uint16_t*>(b.data_ptr());
    const float* wide = back.data<float>();
    for (int64_t i = 0; i < len; ++i) {
      REQUIRE(bits[i] == scalar_bits(x[size_t(i)]));
      BFloat16 ref;
      ref.bits = bits[i];
      const float want = float(ref);
      REQUIRE(std::memcmp(&wide[i], &want, 4) == 0);
    }
  }
}
