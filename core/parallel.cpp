// core/parallel.cpp — the oneTBB arena behind parallel_for.
#include "core/parallel.h"

#include <cstdlib>
#include <memory>
#include <mutex>
#include <thread>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include "core/denormals.h"
#include "core/error.h"

namespace ks {
namespace {

int default_threads() {
  if (const char* env = std::getenv("KS_NUM_THREADS")) {
    int n = std::atoi(env);
    if (n >= 1) return n;
  }
  unsigned hw = std::thread::hardware_concurrency();
  return hw ? static_cast<int>(hw) : 1;
}

struct ArenaState {
  std::mutex mu;
  int threads = default_threads();
  std::unique_ptr<tbb::task_arena> arena;
  tbb::task_arena& get() {
    std::lock_guard<std::mutex> lock(mu);
    if (!arena) arena = std::make_unique<tbb::task_arena>(threads);
    return *arena;
  }
};

ArenaState& state() {
  static ArenaState* s = new ArenaState();
  return *s;
}

thread_local int t_parallel_depth = 0;

}  // namespace

int num_threads() { return state().threads; }

void set_num_threads(int n) {
  KS_CHECK(n >= 1, "set_num_threads: need at least 1 thread, got ", n);
  auto& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  if (n == s.threads) return;
  s.threads = n;
  s.arena.reset();
}

bool in_parallel_region() { return t_parallel_depth > 0; }

void parallel_for_impl(int64_t begin, int64_t end, int64_t grain, const std::function<void(int64_t, int64_t)>& body) {
  state().get().execute([&] {
    tbb::parallel_for(tbb::blocked_range<int64_t>(begin, end, grain), [&](const tbb::blocked_range<int64_t>& r) {
      apply_denormal_mode();  // TBB's workers start with the default float mode
      ++t_parallel_depth;
      try {
        body(r.begin(), r.end());
      } catch (...) {
        --t_parallel_depth;
        throw;
      }
      --t_parallel_depth;
    });
  });
}

}  // namespace ks
