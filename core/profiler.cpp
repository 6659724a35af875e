// core/profiler.cpp — the sums behind core/profiler.h: a thread-local stack of
// open scopes for exclusive times, and one locked map of totals.
#include "core/profiler.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <utility>

namespace ks::profiler {
namespace detail {
std::atomic<bool> g_enabled{false};
}
namespace {

struct Total {
  int64_t calls = 0;
  int64_t ns = 0;
};
std::mutex g_mutex;
std::map<std::pair<std::string, std::string>, Total>& totals() {
  static std::map<std::pair<std::string, std::string>, Total> t;
  return t;
}
thread_local const char* t_phase = "forward";
thread_local Scope* t_open = nullptr;

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

void enable(bool on) { detail::g_enabled = on; }

void reset() {
  std::lock_guard<std::mutex> lock(g_mutex);
  totals().clear();
}

std::vector<Row> rows() {
  std::vector<Row> out;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    for (const auto& [key, t] : totals()) out.push_back({key.first, key.second, t.calls, double(t.ns) * 1e-9});
  }
  std::sort(out.begin(), out.end(), [](const Row& a, const Row& b) { return a.seconds > b.seconds; });
  return out;
}

Phase::Phase(const char* name) : previous_(t_phase) { t_phase = name; }
Phase::~Phase() { t_phase = previous_; }

Scope::Scope(const char* kernel) : kernel_(kernel), phase_(t_phase), parent_(t_open), start_ns_(now_ns()) {
  t_open = this;
}

Scope::~Scope() {
  const int64_t elapsed = now_ns() - start_ns_;
  t_open = parent_;
  if (parent_) parent_->child_ns_ += elapsed;
  std::lock_guard<std::mutex> lock(g_mutex);
  Total& t = totals()[{phase_, kernel_}];
  t.calls += 1;
  t.ns += elapsed - child_ns_;
}

}  // namespace ks::profiler
