// core/allocator.h — the interface through which storage gets memory, and the
// per-device registry of allocators.
//
// The CPU allocator (allocator.cpp) aligns every block to 64 bytes (one cache
// line, one AVX-512 register) and keeps freed blocks in size-class free lists,
// so a training loop that allocates the same shapes every step stops calling
// malloc after its first step. A CUDA backend registers its own allocator here;
// nothing else in core changes.
#pragma once

#include <cstddef>

#include "core/device.h"

namespace ks {

class Allocator {
 public:
  virtual ~Allocator() = default;
  // Returns memory for nbytes (nbytes may be 0); never returns null.
  virtual void* allocate(size_t nbytes, Device device) = 0;
  virtual void deallocate(void* ptr, size_t nbytes, Device device) = 0;
  // Returns cached blocks to the system.
  virtual void empty_cache() {}
};

// The allocator used for new storage on devices of this type. Throws if no
// backend registered one (e.g. CUDA in a CPU-only build).
Allocator& allocator_for(DeviceType type);
void register_allocator(DeviceType type, Allocator* allocator);

// Statistics of the CPU caching allocator, for tests and memory reports.
struct CpuMemoryStats {
  size_t bytes_in_use = 0;  // handed out and not yet freed
  size_t bytes_cached = 0;  // freed, kept for reuse
  size_t peak_in_use = 0;
};
CpuMemoryStats cpu_memory_stats();
// Starts a new peak at what is held now (torch.cuda.reset_peak_memory_stats for
// the CPU): what a later peak_in_use reports is the most held since this call.
void reset_cpu_peak_memory();

// Caching is on unless KS_CPU_CACHE=0 is set (sanitizer builds set it, so that
// a use-after-free is seen by the sanitizer instead of landing in a cached block).
void set_cpu_caching(bool enabled);

}  // namespace ks
