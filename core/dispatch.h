// core/dispatch.h — how an operator finds the kernel for a tensor's device.
//
// Each kernel family is a KernelTable: one function pointer per device type.
// The operator (in ops/) calls `table(device, args...)`; each backend fills in
// its own slot from its own source file with KS_REGISTER_KERNEL. A CUDA
// backend therefore adds kernels without touching any operator definition:
//
//   // ops/softmax.h (declaration, shared by all backends)
//   using SoftmaxKernel = void(bool log, const Tensor& out, const Tensor& x, int64_t dim);
//   extern KernelTable<SoftmaxKernel> softmax_kernel;
//   // ops/cpu/softmax.cpp
//   KS_REGISTER_KERNEL(softmax_kernel, CPU, softmax_cpu);
//   // ops/cuda/softmax.cu
//   KS_REGISTER_KERNEL(softmax_kernel, CUDA, softmax_cuda);
//
// The elementwise families keep one table per op descriptor (a variable
// template, e.g. unary_kernel<Op> in ops/unary.h), which each backend fills
// for a whole op list in one call (ops/unary_kernels.h).
//
// Tables are constant-initialised, so registration from any translation unit's
// static initialiser is safe. A plugin's registrations (core/plugin.h) are
// recorded under the plugin's name, and one into a slot that is filled
// already is refused and reported naming both sides, as a plugin's attention
// families and model kinds are (core/plugin_loader.h). Every call is timed while profiling is on
// (core/profiler.h). Keystone is linked as one library (the layer
// targets are object libraries), so no registering object file is dropped.
#pragma once

#include <utility>

#include "core/device.h"
#include "core/error.h"
#include "core/profiler.h"
#include "core/registry.h"  // KS_CONCAT

namespace ks {

// core/plugin_loader.cpp: whether table `table`'s slot for `type` may be
// filled (`filled`: it holds a kernel already); false only while a plugin
// loads and the slot is filled. Records the kernel as the loading plugin's.
bool kernel_may_register(const char* table, DeviceType type, bool filled);

template <class Fn> class KernelTable {
 public:
  constexpr explicit KernelTable(const char* name) : name_(name), table_{} {}

  // Fills the slot of `type`; false (the slot kept) for a plugin's kernel
  // where there is one already.
  bool set(DeviceType type, Fn* fn) {
    if (!kernel_may_register(name_, type, has(type))) return false;
    table_[static_cast<int>(type)] = fn;
    return true;
  }
  bool has(DeviceType type) const { return table_[static_cast<int>(type)] != nullptr; }

  Fn* get(Device device) const {
    Fn* fn = table_[static_cast<int>(device.type)];
    KS_CHECK(fn, name_, ": no kernel for device ", device.str(),
             device.is_cuda() ? " (Keystone was built without the CUDA backend)" : "");
    return fn;
  }

  template <class... Args> decltype(auto) operator()(Device device, Args&&... args) const {
    if (profiler::enabled()) {  // core/profiler.h: this call's time, charged to the table's name
      profiler::Scope scope(name_);
      return get(device)(std::forward<Args>(args)...);
    }
    return get(device)(std::forward<Args>(args)...);
  }

 private:
  const char* name_;
  Fn* table_[kNumDeviceTypes];
};

}  // namespace ks

#define KS_REGISTER_KERNEL(table, device_type, fn) \
  static const bool KS_CONCAT(ks_kernel_registered_, __LINE__) = (table).set(::ks::DeviceType::device_type, (fn))
