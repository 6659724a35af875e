// core/copy.cpp — copy_, fill_, contiguous_raw, to_raw and their CPU kernels.
#include "core/copy.h"

#include <cstring>

#include "core/strided_loop.h"

namespace ks {

constinit KernelTable<CopyKernel> copy_kernel("copy");
constinit KernelTable<FillKernel> fill_kernel("fill");
constinit KernelTable<DeviceMemcpy> device_memcpy("device_memcpy");

namespace {

// Strides of `t` broadcast to `shape` (0 where t is broadcast), right-aligned.
Shape broadcast_strides(const Tensor& t, const Shape& shape, const char* op) {
  const int64_t nd = int64_t(shape.size()), td = t.dim();
  KS_CHECK(td <= nd, op, ": cannot broadcast ", describe(t), " to ", shape);
  Shape s(nd, 0);
  for (int64_t i = 0; i < td; ++i) {
    int64_t d = nd - td + i;
    if (t.sizes()[i] == shape[d])
      s[d] = t.strides()[i];
    else
      KS_CHECK(t.sizes()[i] == 1, op, ": cannot broadcast ", describe(t), " to ", shape);
  }
  return s;
}

void copy_cpu(const Tensor& dst, const Tensor& src) {
  auto L =
      make_strided_layout<2>(dst.sizes(), {dst.strides(), src.strides()}, {dst.element_size(), src.element_size()});
  char* base_d = static_cast<char*>(dst.data_ptr());
  char* base_s = static_cast<char*>(src.data_ptr());
  dispatch_storage(dst.dtype(), "copy", [&](auto dt) {
    using D = typename decltype(dt)::type;
    dispatch_storage(src.dtype(), "copy", [&](auto st) {
      using S = typename decltype(st)::type;
      strided_for_each<2>(
          L, {base_d, base_s}, kElementwiseGrain, [](std::array<char*, 2> p, int64_t n, std::array<int64_t, 2> s) {
            if constexpr (std::is_same_v<D, S>) {
              if (s[0] == int64_t(sizeof(D)) && s[1] == int64_t(sizeof(S))) {
                std::memcpy(p[0], p[1], size_t(n) * sizeof(D));
                return;
              }
            }
            for (int64_t i = 0; i < n; ++i)
              *reinterpret_cast<D*>(p[0] + i * s[0]) = convert<D>(*reinterpret_cast<const S*>(p[1] + i * s[1]));
          });
    });
  });
}

void fill_cpu(const Tensor& t, double value) {
  auto L = make_strided_layout<1>(t.sizes(), {t.strides()}, {t.element_size()});
  dispatch_storage(t.dtype(), "fill", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T v = convert<T>(value);
    strided_for_each<1>(L, {static_cast<char*>(t.data_ptr())}, kElementwiseGrain,
                        [&](std::array<char*, 1> p, int64_t n, std::array<int64_t, 1> s) {
                          if (s[0] == int64_t(sizeof(T))) {
                            T* d = reinterpret_cast<T*>(p[0]);
                            for (int64_t i = 0; i < n; ++i) d[i] = v;
                          } else {
                            for (int64_t i = 0; i < n; ++i) *reinterpret_cast<T*>(p[0] + i * s[0]) = v;
                          }
                        });
  });
}

void memcpy_cpu(void* dst, Device, const void* src, Device, size_t nbytes) {
  if (nbytes) std::memcpy(dst, src, nbytes);
}

KS_REGISTER_KERNEL(copy_kernel, CPU, copy_cpu);
KS_REGISTER_KERNEL(fill_kernel, CPU, fill_cpu);
KS_REGISTER_KERNEL(device_memcpy, CPU, memcpy_cpu);

}  // namespace

void copy_(const Tensor& dst, const Tensor& src) {
  KS_CHECK(dst.is_non_overlapping(), "copy_: destination ", describe(dst), " has overlapping (expanded) elements");
  Tensor s = src.alias(dst.sizes(), broadcast_strides(src, dst.sizes(), "copy_"), src.storage_offset());
  if (dst.numel() == 0) return;
  if (dst.device() == s.device()) {
    copy_kernel(dst.device(), dst, s);
  } else {
    // Stage through a contiguous buffer of src's dtype on each side.
    Tensor staged_src = contiguous_raw(s);
    Tensor landed = Tensor::empty(dst.sizes(), src.dtype(), dst.device());
    Device remote = dst.device().is_cpu() ? src.device() : dst.device();
    device_memcpy(remote, landed.data_ptr(), dst.device(), staged_src.data_ptr(), src.device(),
                  size_t(dst.numel()) * src.element_size());
    copy_kernel(dst.device(), dst, landed);
  }
  dst.bump_version();
}

void fill_(const Tensor& t, double value) {
  if (t.numel() > 0) fill_kernel(t.device(), t, value);
  t.bump_version();
}

Tensor contiguous_raw(const Tensor& t) {
  if (t.is_contiguous()) return t;
  Tensor out = Tensor::empty(t.sizes(), t.dtype(), t.device());
  copy_(out, t);
  return out;
}

Tensor to_raw(const Tensor& t, Device device, DType dtype) {
  if (t.device() == device && t.dtype() == dtype && t.is_contiguous()) return t;
  Tensor out = Tensor::empty(t.sizes(), dtype, device);
  copy_(out, t);
  return out;
}

}  // namespace ks
