// core/storage.h — a refcounted block of bytes on one device.
//
// Storage knows nothing of shapes or dtypes: many tensors (views) may share
// one Storage, each with its own sizes, strides and offset. The bytes go back
// to their allocator when the last tensor referring to them dies.
#pragma once

#include <cstddef>
#include <memory>

#include "core/allocator.h"
#include "core/device.h"

namespace ks {

class StorageImpl {
 public:
  StorageImpl(size_t nbytes, Device device)
      : nbytes_(nbytes), device_(device), allocator_(&allocator_for(device.type)) {
    data_ = allocator_->allocate(nbytes, device);
  }
  // Bytes from a particular allocator rather than the device's default one
  // (pinned host memory is CPU memory from the CUDA backend's allocator).
  StorageImpl(size_t nbytes, Device device, Allocator* allocator)
      : nbytes_(nbytes), device_(device), allocator_(allocator) {
    data_ = allocator_->allocate(nbytes, device);
  }
  ~StorageImpl() { allocator_->deallocate(data_, nbytes_, device_); }
  StorageImpl(const StorageImpl&) = delete;
  StorageImpl& operator=(const StorageImpl&) = delete;

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }

 private:
  void* data_ = nullptr;
  size_t nbytes_;
  Device device_;
  Allocator* allocator_;
};

using Storage = std::shared_ptr<StorageImpl>;

inline Storage make_storage(size_t nbytes, Device device) { return std::make_shared<StorageImpl>(nbytes, device); }

}  // namespace ks
