// ops/cpu/avx512_clone.cpp — the switch that lets tests run the AVX2 code of
// a kernel with an AVX-512 twin on a machine that has AVX-512, to compare
// their bits (avx512_clone.h). Not here: the twins.
#include "ops/cpu/avx512_clone.h"

#include <atomic>

namespace ks::cpu {
namespace {

std::atomic<bool> twins_on{true};

}  // namespace

bool avx512_twins_enabled() { return twins_on.load(std::memory_order_relaxed); }

bool set_avx512_twins(bool on) { return twins_on.exchange(on); }

}  // namespace ks::cpu
