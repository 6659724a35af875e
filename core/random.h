// core/random.h — reproducible random numbers: the Philox4x32-10 counter-based
// generator and the Generator state (seed + offset).
//
// Element i of a random tensor is a pure function of (seed, offset, i), so the
// values do not depend on the thread count or on how the work is split, and a
// GPU kernel can compute the same stream. Each draw advances the generator's
// offset past the counters it used, so successive draws differ. The block
// function and the uniform conversions are KS_HOST_DEVICE: the CUDA kernels
// run this very code (Salmon et al., "Parallel random numbers: as easy as
// 1, 2, 3", SC 2011).
#pragma once

#include <array>
#include <cstdint>
#include <mutex>

#include "core/host_device.h"

namespace ks {

// One Philox4x32-10 block: out = 4 random 32-bit words for (key, counter).
KS_HOST_DEVICE inline void philox4x32_10(uint64_t key, uint64_t counter_hi, uint64_t counter_lo, uint32_t out[4]) {
  constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
  constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;
  uint32_t c0 = uint32_t(counter_lo), c1 = uint32_t(counter_lo >> 32);
  uint32_t c2 = uint32_t(counter_hi), c3 = uint32_t(counter_hi >> 32);
  uint32_t k0 = uint32_t(key), k1 = uint32_t(key >> 32);
  for (int round = 0; round < 10; ++round) {
    uint64_t p0 = uint64_t(kMul0) * c0;
    uint64_t p1 = uint64_t(kMul1) * c2;
    uint32_t n0 = uint32_t(p1 >> 32) ^ c1 ^ k0;
    uint32_t n1 = uint32_t(p1);
    uint32_t n2 = uint32_t(p0 >> 32) ^ c3 ^ k1;
    uint32_t n3 = uint32_t(p0);
    c0 = n0;
    c1 = n1;
    c2 = n2;
    c3 = n3;
    k0 += kWeyl0;
    k1 += kWeyl1;
  }
  out[0] = c0;
  out[1] = c1;
  out[2] = c2;
  out[3] = c3;
}

inline std::array<uint32_t, 4> philox4x32(uint64_t key, uint64_t counter_hi, uint64_t counter_lo) {
  std::array<uint32_t, 4> w;
  philox4x32_10(key, counter_hi, counter_lo, w.data());
  return w;
}

class Generator {
 public:
  explicit Generator(uint64_t seed = 0x5eed) : seed_(seed) {}
  void manual_seed(uint64_t seed) {
    std::lock_guard<std::mutex> lock(mu_);
    seed_ = seed;
    offset_ = 0;
  }
  uint64_t seed() const { return seed_; }
  // Reserves `blocks` Philox counters; returns the first.
  uint64_t reserve(uint64_t blocks) {
    std::lock_guard<std::mutex> lock(mu_);
    uint64_t first = offset_;
    offset_ += blocks;
    return first;
  }
  uint64_t offset() const { return offset_; }
  void set_state(uint64_t seed, uint64_t offset) {
    std::lock_guard<std::mutex> lock(mu_);
    seed_ = seed;
    offset_ = offset;
  }

 private:
  std::mutex mu_;
  uint64_t seed_;
  uint64_t offset_ = 0;
};

Generator& default_generator();
inline void manual_seed(uint64_t seed) { default_generator().manual_seed(seed); }

// Uniform in [0, 1) from 32 / 64 random bits.
KS_HOST_DEVICE inline float uniform_float(uint32_t w) { return float(w >> 8) * (1.0f / 16777216.0f); }
KS_HOST_DEVICE inline double uniform_double(uint32_t hi, uint32_t lo) {
  uint64_t x = (uint64_t(hi) << 32 | lo) >> 11;
  return double(x) * (1.0 / 9007199254740992.0);
}

}  // namespace ks
