// core/clock.h — the one clock that Keystone times things with: seconds on
// the monotonic (steady) clock, which never jumps with the wall clock, so a
// difference of two readings is an elapsed time even across an NTP step.
// Also the time since the process started, as the kernel recorded its start,
// so that library loading and static initialisation count.
// Not here: dates (tools/train/provenance.cpp stamps UTC), or the profiler's
// nanosecond counter (core/profiler.h).
#pragma once

#include <chrono>

namespace ks {

// Seconds since an arbitrary fixed point; only differences mean anything.
inline double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Seconds since this process started (Linux: /proc/self/stat's start time in
// clock ticks, against CLOCK_BOOTTIME; resolution one tick, 10 ms), or a
// negative value where that cannot be read. What a user waits for from the
// command line, library loading and static initialisation included.
double seconds_since_process_start();

}  // namespace ks
