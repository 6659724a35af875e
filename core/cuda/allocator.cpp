// core/cuda/allocator.cpp — the caching CUDA device allocator and the pinned
// host allocator, registered at load time.
//
// Device memory. cudaMalloc and cudaFree are slow and cudaFree synchronises
// the device, so freed blocks are kept in free lists per device and size
// class and handed out again; after a training loop's first step no
// allocation reaches the driver. Size classes: multiples of 512 bytes up to
// 1 MiB, then eight classes per power of two (at most 12.5% waste). A block
// freed by the host may still be read by queued kernels; handing it to the
// next tensor is safe because every kernel of a device runs on its one stream
// (runtime.h), in order. When cudaMalloc fails, the device's cache is
// released and the call retried once before an error names the size and the
// device.
//
// Pinned host memory (cudaHostAlloc) backs loader buffers, whose copies to a
// device run asynchronously. A freed pinned block may still be read by such a
// copy, so it waits on the events recorded for its copies (record_pinned_use)
// before it is reused. This file is not the CPU allocator (core/allocator.cpp).
#include "core/cuda/allocator.h"

#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "core/allocator.h"
#include "core/cuda.h"
#include "core/cuda/cuda_check.h"
#include "core/cuda/runtime.h"
#include "core/storage.h"

namespace ks::cuda {
namespace {

size_t size_class(size_t n) {
  if (n == 0) n = 1;
  constexpr size_t kSmall = 512, kLarge = size_t(1) << 20;
  if (n <= kLarge) return (n + kSmall - 1) / kSmall * kSmall;
  size_t p = kLarge;
  while (p < n) p <<= 1;       // n in (p/2, p]
  const size_t step = p / 16;  // classes p/2 + k*p/16, k = 1..8
  return (n + step - 1) / step * step;
}

std::string mib(size_t bytes) { return str(double(bytes) / double(1 << 20), " MiB"); }

class CudaAllocator final : public Allocator {
 public:
  void* allocate(size_t nbytes, Device device) override {
    check_device(device);
    const size_t cls = size_class(nbytes);
    DeviceState& d = state(device.index);
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = d.free.find(cls);
      if (it != d.free.end() && !it->second.empty()) {
        void* p = it->second.back();
        it->second.pop_back();
        d.stats.bytes_cached -= cls;
        take(d, cls);
        return p;
      }
    }
    DeviceGuard guard(device);
    void* p = nullptr;
    cudaError_t err = cudaMalloc(&p, cls);
    if (err == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();
      empty_device_cache(device.index);
      err = cudaMalloc(&p, cls);
    }
    if (err != cudaSuccess) {
      (void)cudaGetLastError();
      const CudaMemoryStats s = stats(device.index);
      throw Error(str("cuda allocator: cannot allocate ", nbytes, " bytes (", mib(cls), ") on ", device.str(), ": ",
                      cudaGetErrorString(err), " (", mib(s.bytes_in_use), " in use by tensors, ", mib(s.bytes_reserved),
                      " reserved by Keystone)"));
    }
    std::lock_guard<std::mutex> lock(mu_);
    d.stats.bytes_reserved += cls;
    take(d, cls);
    return p;
  }

  void deallocate(void* ptr, size_t nbytes, Device device) override {
    const size_t cls = size_class(nbytes);
    DeviceState& d = state(device.index);
    std::lock_guard<std::mutex> lock(mu_);
    d.stats.bytes_in_use -= cls;
    d.stats.bytes_cached += cls;
    d.free[cls].push_back(ptr);
  }

  void empty_cache() override {
    for (int i = 0; i < cuda_device_count(); ++i) empty_device_cache(i);
  }

  void empty_device_cache(int device) {
    DeviceState& d = state(device);
    std::unordered_map<size_t, std::vector<void*>> blocks;
    {
      std::lock_guard<std::mutex> lock(mu_);
      blocks.swap(d.free);
      for (auto& [cls, list] : blocks) {
        d.stats.bytes_cached -= cls * list.size();
        d.stats.bytes_reserved -= cls * list.size();
      }
    }
    if (blocks.empty()) return;
    DeviceGuard guard(device);
    // cudaFree waits for the device, so no queued kernel still reads these blocks.
    for (auto& [cls, list] : blocks)
      for (void* p : list) KS_CUDA_CHECK(cudaFree(p));
  }

  CudaMemoryStats stats(int device) {
    std::lock_guard<std::mutex> lock(mu_);
    return state(device).stats;
  }

 private:
  struct DeviceState {
    std::unordered_map<size_t, std::vector<void*>> free;
    CudaMemoryStats stats;
  };
  static constexpr int kMaxDevices = 64;

  DeviceState& state(int device) {
    KS_CHECK(device >= 0 && device < kMaxDevices, "cuda allocator: bad device index ", device);
    return devices_[size_t(device)];
  }
  static void take(DeviceState& d, size_t cls) {
    d.stats.bytes_in_use += cls;
    if (d.stats.bytes_in_use > d.stats.peak_in_use) d.stats.peak_in_use = d.stats.bytes_in_use;
  }

  std::mutex mu_;
  DeviceState devices_[kMaxDevices];
};

class PinnedAllocator final : public Allocator {
 public:
  void* allocate(size_t nbytes, Device) override {
    const size_t cls = size_class(nbytes);
    {
      std::lock_guard<std::mutex> lock(mu_);
      collect_pending();
      auto it = free_.find(cls);
      if (it != free_.end() && !it->second.empty()) {
        void* p = it->second.back();
        it->second.pop_back();
        live_[static_cast<const char*>(p)] = Block{cls, {}};
        return p;
      }
    }
    void* p = nullptr;
    KS_CHECK(cuda_available(), "pinned_empty: no CUDA device (pinned memory is for copies to one)");
    cudaError_t err = cudaHostAlloc(&p, cls, cudaHostAllocPortable);
    if (err != cudaSuccess) {
      (void)cudaGetLastError();
      throw Error(
          str("pinned allocator: cannot allocate ", nbytes, " bytes of pinned host memory: ", cudaGetErrorString(err)));
    }
    std::lock_guard<std::mutex> lock(mu_);
    live_[static_cast<const char*>(p)] = Block{cls, {}};
    return p;
  }

  void deallocate(void* ptr, size_t, Device) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = live_.find(static_cast<const char*>(ptr));
    if (it == live_.end()) return;  // not ours: cannot happen for storages made by pinned_empty
    Block b = std::move(it->second);
    live_.erase(it);
    if (b.uses.empty())
      free_[b.cls].push_back(ptr);
    else
      pending_.push_back({ptr, std::move(b)});
  }

  bool contains(const void* ptr) {
    std::lock_guard<std::mutex> lock(mu_);
    return find(ptr) != live_.end();
  }

  void record_use(const void* ptr, cudaStream_t s) {
    cudaEvent_t e;
    KS_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    KS_CUDA_CHECK(cudaEventRecord(e, s));
    std::lock_guard<std::mutex> lock(mu_);
    auto it = find(ptr);
    KS_ASSERT(it != live_.end());
    it->second.uses.push_back(e);
  }

 private:
  struct Block {
    size_t cls;
    std::vector<cudaEvent_t> uses;  // copies queued from this block
  };

  // The live block containing ptr (blocks are keyed by their start).
  std::map<const char*, Block>::iterator find(const void* ptr) {
    const char* p = static_cast<const char*>(ptr);
    auto it = live_.upper_bound(p);
    if (it == live_.begin()) return live_.end();
    --it;
    return p < it->first + it->second.cls ? it : live_.end();
  }

  // Moves freed blocks whose copies have all finished to the free lists. mu_ held.
  void collect_pending() {
    for (size_t i = 0; i < pending_.size();) {
      auto& [ptr, b] = pending_[i];
      bool done = true;
      for (cudaEvent_t e : b.uses) {
        const cudaError_t q = cudaEventQuery(e);
        if (q == cudaErrorNotReady) {
          done = false;
          break;
        }
        if (q != cudaSuccess) throw_cuda_error(q, "cudaEventQuery(pinned block use)", __FILE__, __LINE__);
      }
      if (!done) {
        ++i;
        continue;
      }
      for (cudaEvent_t e : b.uses) KS_CUDA_CHECK(cudaEventDestroy(e));
      free_[b.cls].push_back(ptr);
      pending_[i] = std::move(pending_.back());
      pending_.pop_back();
    }
  }

  std::mutex mu_;
  std::map<const char*, Block> live_;
  std::unordered_map<size_t, std::vector<void*>> free_;
  std::vector<std::pair<void*, Block>> pending_;
};

// Never destroyed: storages may outlive static destruction.
CudaAllocator& device_allocator() {
  static CudaAllocator* a = new CudaAllocator();
  return *a;
}
PinnedAllocator& pinned_allocator() {
  static PinnedAllocator* a = new PinnedAllocator();
  return *a;
}

[[maybe_unused]] const bool g_registered = (register_allocator(DeviceType::CUDA, &device_allocator()), true);

}  // namespace

bool is_pinned_ptr(const void* ptr) { return pinned_allocator().contains(ptr); }
void record_pinned_use(const void* ptr, cudaStream_t s) { pinned_allocator().record_use(ptr, s); }

}  // namespace ks::cuda

namespace ks {

CudaMemoryStats cuda_memory_stats(int device) { return cuda::device_allocator().stats(device); }
void cuda_empty_cache(int device) { cuda::device_allocator().empty_device_cache(device); }

Tensor pinned_empty(const Shape& shape, DType dtype) {
  for (int64_t s : shape) KS_CHECK(s >= 0, "pinned_empty: negative size in shape ", shape);
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::make_shared<StorageImpl>(size_t(numel_of(shape)) * itemsize(dtype), Device::cpu(),
                                                &cuda::pinned_allocator());
  impl->sizes = shape;
  impl->strides = contiguous_strides(shape);
  impl->dtype = dtype;
  return Tensor(std::move(impl));
}

bool is_pinned(const Tensor& t) { return t.defined() && cuda::is_pinned_ptr(t.impl()->storage->data()); }

}  // namespace ks
