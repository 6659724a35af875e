// core/copy.cpp — copy_, fill_, contiguous_raw, to_raw and their CPU kernels.
// Casts between float32 and bfloat16 of contiguous runs (the bf16 copies
// that bf16 precision saves for the backward, and their widening) run in
// 512- or 256-bit registers with BFloat16's own rounding, bit for bit
// (core/bf16_simd.h; a NaN becomes the quiet 0x7fc0, as core/dtype.h's
// BFloat16 makes it); every other copy
// runs the scalar loop.
#include "core/copy.h"

// GCC 12's AVX-512 intrinsics pass _mm512_undefined_epi32() as an unused
// source, which -Wmaybe-uninitialized reports (GCC bug 105593).
#if !defined(__clang__)  // a GCC-only warning
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <cstring>
#include <type_traits>

#include "core/bf16_simd.h"
#include "core/cpu_features.h"
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

#define KS_COPY_AVX2 __attribute__((target("avx2")))
#define KS_COPY_AVX512 __attribute__((target("avx2,avx512f,avx512bw,avx512vl")))

// d[i] = BFloat16(s[i]) for i < n; the tail (and a CPU without AVX2) scalar.
KS_COPY_AVX512 int64_t round_to_bf16_avx512(const float* s, uint16_t* d, int64_t n) {
  const __m512i quiet = _mm512_set1_epi32(0x7fc0);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512i u = _mm512_loadu_si512(s + i);
    __m512i r = _mm512_srli_epi32(bf16_simd::with_rounding_bias(u), 16);
    r = _mm512_mask_mov_epi32(r, bf16_simd::nan_lanes(u), quiet);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i), _mm512_cvtepi32_epi16(r));
  }
  return i;
}

KS_COPY_AVX2 int64_t round_to_bf16_avx2(const float* s, uint16_t* d, int64_t n) {
  const __m256i quiet = _mm256_set1_epi32(0x7fc0);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m256i r[2];
    for (int h = 0; h < 2; ++h) {
      const __m256i u = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i + 8 * h));
      const __m256i rounded = _mm256_srli_epi32(bf16_simd::with_rounding_bias(u), 16);
      r[h] = _mm256_blendv_epi8(rounded, quiet, bf16_simd::nan_lanes(u));
    }
    // packus works within 128-bit lanes: (a0 b0 a1 b1), put back in order.
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(r[0], r[1]), 0xd8);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i), packed);
  }
  return i;
}

// d[i] = float(s[i]): the bits moved up by 16.
KS_COPY_AVX2 int64_t widen_bf16_avx2(const uint16_t* s, float* d, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i), _mm256_slli_epi32(w, 16));
  }
  return i;
}

// A contiguous run cast between float32 and bfloat16 in registers; false for any other pair.
template <class D, class S> bool cast_run(char* dst, const char* src, int64_t n) {
  static const bool avx2 = cpu_features().avx2;
  static const CastIsa widest = cpu_features().avx512 ? CastIsa::Avx512 : CastIsa::Avx2;
  if (!avx2) return false;
  if constexpr (std::is_same_v<D, BFloat16> && std::is_same_v<S, float>) {
    const float* s = reinterpret_cast<const float*>(src);
    uint16_t* d = reinterpret_cast<uint16_t*>(dst);
    int64_t i = round_to_bf16_run(s, d, n, widest);
    for (; i < n; ++i) d[i] = BFloat16(s[i]).bits;
    return true;
  } else if constexpr (std::is_same_v<D, float> && std::is_same_v<S, BFloat16>) {
    const uint16_t* s = reinterpret_cast<const uint16_t*>(src);
    float* d = reinterpret_cast<float*>(dst);
    int64_t i = widen_bf16_run(s, d, n);
    for (; i < n; ++i) {
      BFloat16 b;
      b.bits = s[i];
      d[i] = float(b);
    }
    return true;
  }
  return false;
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
            if (s[0] == int64_t(sizeof(D)) && s[1] == int64_t(sizeof(S))) {
              if constexpr (std::is_same_v<D, S>) {
                std::memcpy(p[0], p[1], size_t(n) * sizeof(D));
                return;
              } else if (cast_run<D, S>(p[0], p[1], n)) {
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

int64_t round_to_bf16_run(const float* src, uint16_t* dst, int64_t n, CastIsa isa) {
  const CpuFeatures& f = cpu_features();
  if (isa == CastIsa::Avx512 && f.avx512) return round_to_bf16_avx512(src, dst, n);
  if (isa == CastIsa::Avx2 && f.avx2) return round_to_bf16_avx2(src, dst, n);
  return 0;
}

int64_t widen_bf16_run(const uint16_t* src, float* dst, int64_t n) {
  return cpu_features().avx2 ? widen_bf16_avx2(src, dst, n) : 0;
}

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
