// core/random.h — reproducible random numbers: the Philox4x32-10 counter-based
// generator and the Generator state (seed + offset).
//
// Element i of a random tensor is a pure function of (seed, offset, i), so the
// values do not depend on the thread count or on how the work is split, and a
// GPU kernel can compute the same stream. Each draw advances the generator's
// offset past the counters it used, so successive draws differ.
#pragma once

#include <array>
#include <cstdint>
#include <mutex>

namespace ks {

// One Philox4x32-10 block: 4 random 32-bit words for (key, counter).
std::array<uint32_t, 4> philox4x32(uint64_t key, uint64_t counter_hi, uint64_t counter_lo);

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
inline float uniform_float(uint32_t w) { return float(w >> 8) * (1.0f / 16777216.0f); }
inline double uniform_double(uint32_t hi, uint32_t lo) {
  uint64_t x = (uint64_t(hi) << 32 | lo) >> 11;
  return double(x) * (1.0 / 9007199254740992.0);
}

}  // namespace ks
