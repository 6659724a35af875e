// tests/core/test_clock.cpp — core/clock.h: now_s measures an elapsed time,
// and seconds_since_process_start (the kernel's record of this process's
// start, which `keystone bench` reports as first_step_s) is positive, below
// the time the machine has been up, and moves with now_s.
#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <thread>

#include "core/clock.h"

using namespace ks;

TEST_CASE("seconds since the process started: positive, below the uptime, and moving with now_s") {
  const double a = seconds_since_process_start(), t0 = now_s();
  REQUIRE(a > 0);
  double uptime = 0;
  std::ifstream("/proc/uptime") >> uptime;
  CHECK(a < uptime + 0.02);
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  const double b = seconds_since_process_start(), elapsed = now_s() - t0;
  CHECK(elapsed >= 0.06);
  // The start time is one fixed reading, so the two differ by the time between.
  CHECK(std::fabs((b - a) - elapsed) < 0.005);
}
