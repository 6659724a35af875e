// core/clock.cpp — seconds_since_process_start (core/clock.h): the kernel's
// record of when this process started, read from /proc. Not here: now_s,
// which is inline in the header.
#include "core/clock.h"

#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace ks {

double seconds_since_process_start() {
  std::ifstream in("/proc/self/stat");
  std::string line;
  if (!std::getline(in, line)) return -1;
  // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so
  // count fields from the last ')'; start time is field 22, the 20th after it.
  const size_t close = line.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream rest(line.substr(close + 1));
  std::string field;
  for (int i = 0; i < 20; ++i)
    if (!(rest >> field)) return -1;
  const long ticks_per_s = sysconf(_SC_CLK_TCK);
  timespec boot{};
  if (ticks_per_s <= 0 || clock_gettime(CLOCK_BOOTTIME, &boot) != 0) return -1;
  char* end = nullptr;
  const unsigned long long start_ticks = std::strtoull(field.c_str(), &end, 10);
  if (end == field.c_str() || *end != '\0') return -1;
  const double started = double(start_ticks) / double(ticks_per_s);
  return double(boot.tv_sec) + 1e-9 * double(boot.tv_nsec) - started;
}

}  // namespace ks
