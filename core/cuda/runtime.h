// core/cuda/runtime.h — the CUDA backend's view of devices: the current
// device, the one stream per device that all work goes to, and launch sizes.
//
// Stream ordering (the assumption the allocator and every kernel rely on):
// all of Keystone's kernels, cuBLAS calls and copies for device d are queued
// on stream(d), a stream created once per device (blocking with respect to
// the legacy default stream, so work another library queues there is ordered
// too). Work on one stream runs in queue order, so memory freed by the host
// after queueing a kernel that reads it can be handed to the next kernel at
// once: that kernel cannot start before the reader finishes. Anything that
// reads device memory from the host (copies to the CPU, item()) synchronises
// the stream first. A kernel that would use another stream must first wait
// on stream(d) and must keep its memory alive until it has finished.
// Host code only; the elementwise launch and device-side conversions for
// kernels are in core/cuda/loops.cuh.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/device.h"

namespace ks::cuda {

// Makes `device` current for the scope, restoring the previous one after.
class DeviceGuard {
 public:
  explicit DeviceGuard(Device device);
  explicit DeviceGuard(int index);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;  // -1: nothing to restore
};

// The stream every kernel for this device is queued on (created on first use).
cudaStream_t stream(int device);
inline cudaStream_t stream(Device d) { return stream(d.index); }
// Checks that `d` is a CUDA device that exists; throws naming it otherwise.
void check_device(Device d);

// Multiprocessor count of the device (cached).
int multiprocessors(int device);

// A grid for `n` independent work items at `threads` per block for a
// grid-stride loop: enough blocks to fill the device, never more than needed.
unsigned int grid_for(int64_t n, int threads, int device);

}  // namespace ks::cuda
