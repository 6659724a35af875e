// core/copy.h — raw copies and fills: the data movement core itself needs
// (contiguous(), to(device), item(), factories). No autograd here: the
// differentiable forms (ks::contiguous, ks::to) are in ops/view.h.
#pragma once

#include "core/dispatch.h"
#include "core/tensor.h"

namespace ks {

// dst[...] = src[...] with dtype conversion; src is broadcast to dst's shape.
// Works across devices. Bumps dst's version.
void copy_(const Tensor& dst, const Tensor& src);

// Every element of t set to value (converted to t's dtype). Bumps t's version.
void fill_(const Tensor& t, double value);

// A contiguous tensor with t's values: t itself if already contiguous.
Tensor contiguous_raw(const Tensor& t);

// A new contiguous tensor on `device` with `dtype`, or t itself if it already
// is one (same device, same dtype, contiguous).
Tensor to_raw(const Tensor& t, Device device, DType dtype);

// The CPU's register loops for contiguous float32 <-> bfloat16 casts, which
// copy_ runs on the widest this CPU has; exposed so that tests can run the
// 256-bit one on an AVX-512 machine too. Each returns how many leading
// elements it converted (a multiple of its width; the caller does the
// rest), 0 where the CPU lacks the instructions.
enum class CastIsa { Avx2, Avx512 };
int64_t round_to_bf16_run(const float* src, uint16_t* dst, int64_t n, CastIsa isa);
int64_t widen_bf16_run(const uint16_t* src, float* dst, int64_t n);

// --- kernel tables, filled by each backend ---
// Same-device strided copy with conversion; shapes already equal (src may have 0 strides).
using CopyKernel = void(const Tensor& dst, const Tensor& src);
extern KernelTable<CopyKernel> copy_kernel;
using FillKernel = void(const Tensor& t, double value);
extern KernelTable<FillKernel> fill_kernel;
// Byte copy between devices (one side may be the CPU); both buffers contiguous.
// Registered by a device backend under its own device type.
using DeviceMemcpy = void(void* dst, Device dst_device, const void* src, Device src_device, size_t nbytes);
extern KernelTable<DeviceMemcpy> device_memcpy;

}  // namespace ks
