// core/clock.h — the one clock that Keystone times things with: seconds on
// the monotonic (steady) clock, which never jumps with the wall clock, so a
// difference of two readings is an elapsed time even across an NTP step.
// Not here: dates (tools/train/provenance.cpp stamps UTC), or the profiler's
// nanosecond counter (core/profiler.h).
#pragma once

#include <chrono>

namespace ks {

// Seconds since an arbitrary fixed point; only differences mean anything.
inline double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace ks
