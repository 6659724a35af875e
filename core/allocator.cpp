// core/allocator.cpp — the 64-byte aligned, caching CPU allocator and the
// allocator registry.
//
// Sizes are rounded up to a size class (powers of two split in four steps, so
// at most 25% waste) and freed blocks wait in a free list per class. The cache
// is bounded; past the bound, blocks go straight back to the system.
#include "core/allocator.h"

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "core/error.h"

namespace ks {
namespace {

constexpr size_t kAlign = 64;
constexpr size_t kMaxCachedBytes = size_t(2) << 30;  // 2 GiB

size_t size_class(size_t n) {
  if (n <= 256) return (n + kAlign - 1) / kAlign * kAlign;
  size_t p = 256;
  while (p < n) p <<= 1;  // p = next power of two >= n
  size_t step = p / 8;    // classes p/2 + k*p/8, k = 1..4
  size_t c = p / 2;
  while (c < n) c += step;
  return c;
}

class CpuAllocator final : public Allocator {
 public:
  CpuAllocator() {
    const char* env = std::getenv("KS_CPU_CACHE");
    caching_ = !(env && std::strcmp(env, "0") == 0);
  }
  ~CpuAllocator() override { empty_cache(); }

  void* allocate(size_t nbytes, Device) override {
    size_t cls = size_class(nbytes == 0 ? 1 : nbytes);
    {
      std::lock_guard<std::mutex> lock(mu_);
      stats_.bytes_in_use += cls;
      if (stats_.bytes_in_use > stats_.peak_in_use) stats_.peak_in_use = stats_.bytes_in_use;
      auto it = free_.find(cls);
      if (it != free_.end() && !it->second.empty()) {
        void* p = it->second.back();
        it->second.pop_back();
        stats_.bytes_cached -= cls;
        return p;
      }
    }
    void* p = std::aligned_alloc(kAlign, cls);
    if (!p) {
      empty_cache();
      p = std::aligned_alloc(kAlign, cls);
    }
    if (!p) {
      std::lock_guard<std::mutex> lock(mu_);
      stats_.bytes_in_use -= cls;
      throw Error(str("cpu allocator: out of memory allocating ", nbytes, " bytes"));
    }
    return p;
  }

  void deallocate(void* ptr, size_t nbytes, Device) override {
    size_t cls = size_class(nbytes == 0 ? 1 : nbytes);
    {
      std::lock_guard<std::mutex> lock(mu_);
      stats_.bytes_in_use -= cls;
      if (caching_ && stats_.bytes_cached + cls <= kMaxCachedBytes) {
        free_[cls].push_back(ptr);
        stats_.bytes_cached += cls;
        return;
      }
    }
    std::free(ptr);
  }

  void empty_cache() override {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [cls, blocks] : free_)
      for (void* p : blocks) std::free(p);
    free_.clear();
    stats_.bytes_cached = 0;
  }

  void set_caching(bool on) {
    caching_ = on;
    if (!on) empty_cache();
  }
  CpuMemoryStats stats() {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
  }
  void reset_peak() {
    std::lock_guard<std::mutex> lock(mu_);
    stats_.peak_in_use = stats_.bytes_in_use;
  }

 private:
  std::mutex mu_;
  std::unordered_map<size_t, std::vector<void*>> free_;
  CpuMemoryStats stats_;
  bool caching_ = true;
};

CpuAllocator& cpu_allocator() {
  static CpuAllocator* a = new CpuAllocator();  // never destroyed: storages may outlive statics
  return *a;
}

Allocator* g_allocators[kNumDeviceTypes] = {};

}  // namespace

Allocator& allocator_for(DeviceType type) {
  if (type == DeviceType::CPU) return cpu_allocator();
  Allocator* a = g_allocators[static_cast<int>(type)];
  KS_CHECK(a, "no allocator for device type ", Device{type, 0}.str(),
           ": Keystone was built without that backend, or it found no device");
  return *a;
}

void register_allocator(DeviceType type, Allocator* allocator) { g_allocators[static_cast<int>(type)] = allocator; }

CpuMemoryStats cpu_memory_stats() { return cpu_allocator().stats(); }
void reset_cpu_peak_memory() { cpu_allocator().reset_peak(); }
void set_cpu_caching(bool enabled) { cpu_allocator().set_caching(enabled); }

}  // namespace ks
