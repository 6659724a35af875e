// core/profiler.h — a per-kernel time profile, like PyTorch's profiler table:
// every call through a KernelTable (core/dispatch.h) is timed while
// profiling is on, under the phase its thread is in (forward, backward,
// optimizer: set by the autograd engine and by the caller), and summed per
// (phase, kernel).
//
// Times are exclusive: a kernel that calls other kernels (a GEMM copying a
// strided operand) is charged only for its own part. They are host wall
// clock, so they describe CPU kernels; CUDA launches return before the GPU
// finishes, and their rows are launch costs only. Off by default: the check
// is one relaxed atomic load per kernel call.
// Not here: printing the table (tools/bench/bench.cpp), timing whole steps.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace ks::profiler {

namespace detail {
extern std::atomic<bool> g_enabled;
}
inline bool enabled() { return detail::g_enabled.load(std::memory_order_relaxed); }
void enable(bool on);
void reset();

struct Row {
  std::string phase, kernel;
  int64_t calls = 0;
  double seconds = 0;  // exclusive
};
// Every (phase, kernel) seen since the last reset, the most time first.
std::vector<Row> rows();

// The phase this thread's kernel calls are charged to, for the guard's scope
// ("forward" outside any guard).
class Phase {
 public:
  explicit Phase(const char* name);
  ~Phase();
  Phase(const Phase&) = delete;
  Phase& operator=(const Phase&) = delete;

 private:
  const char* previous_;
};

// Times one kernel call (KernelTable does this); nested scopes are subtracted from their parent.
class Scope {
 public:
  explicit Scope(const char* kernel);
  ~Scope();
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  const char* kernel_;
  const char* phase_;
  Scope* parent_;
  int64_t start_ns_;
  int64_t child_ns_ = 0;
};

}  // namespace ks::profiler
