// core/denormals.cpp — the FTZ/DAZ setting and the MXCSR bits behind it.
#include "core/denormals.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#define KS_HAS_MXCSR 1
#endif

namespace ks {
namespace {

bool default_flush() {
  const char* env = std::getenv("KS_FLUSH_DENORMALS");
  return !(env && std::strcmp(env, "0") == 0);
}

std::atomic<bool>& flag() {
  static std::atomic<bool> on{default_flush()};
  return on;
}

#ifdef KS_HAS_MXCSR
constexpr unsigned kFlushToZero = 0x8000;       // MXCSR.FTZ: denormal results become 0
constexpr unsigned kDenormalsAreZero = 0x0040;  // MXCSR.DAZ: denormal inputs read as 0
#endif

// The loading thread (usually main) follows the setting before any op runs.
[[maybe_unused]] const bool g_loader_thread_set = (apply_denormal_mode(), true);

}  // namespace

bool flush_denormals() { return flag().load(std::memory_order_relaxed); }

void set_flush_denormals(bool on) {
  flag().store(on);
  apply_denormal_mode();
}

void apply_denormal_mode() {
#ifdef KS_HAS_MXCSR
  const unsigned bits = kFlushToZero | kDenormalsAreZero;
  const unsigned csr = _mm_getcsr();
  const unsigned want = flush_denormals() ? (csr | bits) : (csr & ~bits);
  if (want != csr) _mm_setcsr(want);
#endif
}

}  // namespace ks
