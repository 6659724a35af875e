// core/dtype.h — element types and the switch that turns a runtime dtype into
// a C++ type inside a kernel.
//
// float32 is the working type; float64 serves gradcheck and references; int64
// and int32 hold indices and labels; bool holds masks. bfloat16 and float16
// are stored as 16-bit patterns and computed in float32 (compute_t below): a
// CPU kernel that takes them widens each element as it loads it and rounds
// each result once, as it stores it; a CUDA kernel does the same in its
// threads, with the conversions below compiled for the device.
#pragma once

#include <cstdint>
#include <cstring>
#include <ostream>
#include <string>
#include <type_traits>

#include "core/error.h"
#include "core/host_device.h"

#if defined(__CUDACC__)
#include <cuda_fp16.h>
#endif

namespace ks {

enum class DType : uint8_t { Float32, Float64, Int64, Int32, Bool, BFloat16, Float16 };

size_t itemsize(DType t);
const char* name(DType t);  // "float32", ...
inline std::ostream& operator<<(std::ostream& os, DType t) { return os << name(t); }
inline bool is_floating(DType t) {
  return t == DType::Float32 || t == DType::Float64 || t == DType::BFloat16 || t == DType::Float16;
}
// bfloat16 and float16: stored in 16 bits, computed in float32 (compute_t below).
inline bool is_16bit(DType t) { return t == DType::BFloat16 || t == DType::Float16; }
DType parse_dtype(const std::string& s);  // throws on an unknown name

// The bits of a float and back, on the host and on a GPU.
KS_HOST_DEVICE inline uint32_t float_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
#endif
}
KS_HOST_DEVICE inline float float_from_bits(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, 4);
  return f;
#endif
}

// 16-bit storage types. Conversion rounds to nearest even, and a NaN becomes
// one quiet NaN (0x7fc0; float16: 0x7e00 with the sign), so the CPU and a GPU
// store the same bits for every float.
struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  // Integer arithmetic only, the same code on both sides.
  KS_HOST_DEVICE explicit BFloat16(float f) {
    uint32_t u = float_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) {
      bits = 0x7fc0;
      return;
    }  // NaN stays NaN
    u += 0x7fffu + ((u >> 16) & 1u);
    bits = static_cast<uint16_t>(u >> 16);
  }
  KS_HOST_DEVICE explicit operator float() const { return float_from_bits(static_cast<uint32_t>(bits) << 16); }
};

// float16's bit arithmetic, for the host (core/dtype.cpp); a GPU converts in
// one instruction (__float2half_rn, __half2float), which rounds the same way.
uint16_t float16_bits_of(float f);
float float16_value_of(uint16_t bits);

struct Float16 {
  uint16_t bits = 0;
  Float16() = default;
  KS_HOST_DEVICE explicit Float16(float f) {
#if defined(__CUDA_ARCH__)
    bits = f != f ? static_cast<uint16_t>(((float_bits(f) >> 16) & 0x8000u) | 0x7e00u)
                  : __half_as_ushort(__float2half_rn(f));
#else
    bits = float16_bits_of(f);
#endif
  }
  KS_HOST_DEVICE explicit operator float() const {
#if defined(__CUDA_ARCH__)
    return __half2float(__ushort_as_half(bits));
#else
    return float16_value_of(bits);
#endif
  }
};

// The C++ type stored for each dtype.
template <DType D> struct CppType;
template <> struct CppType<DType::Float32> { using type = float; };
template <> struct CppType<DType::Float64> { using type = double; };
template <> struct CppType<DType::Int64> { using type = int64_t; };
template <> struct CppType<DType::Int32> { using type = int32_t; };
template <> struct CppType<DType::Bool> { using type = bool; };
template <> struct CppType<DType::BFloat16> { using type = BFloat16; };
template <> struct CppType<DType::Float16> { using type = Float16; };

template <class T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::Float32; }
template <> constexpr DType dtype_of<double>() { return DType::Float64; }
template <> constexpr DType dtype_of<int64_t>() { return DType::Int64; }
template <> constexpr DType dtype_of<int32_t>() { return DType::Int32; }
template <> constexpr DType dtype_of<bool>() { return DType::Bool; }
template <> constexpr DType dtype_of<BFloat16>() { return DType::BFloat16; }
template <> constexpr DType dtype_of<Float16>() { return DType::Float16; }

// A value-less carrier of a type, so a generic lambda can learn T:
//   dispatch_floating(t.dtype(), "exp", [&](auto tag) { using T = typename decltype(tag)::type; ... });
template <class T> struct TypeTag { using type = T; };

// The type a kernel computes elements of type T in: float for the 16-bit
// types (PyTorch's "opmath" type: a sum of bfloat16 values accumulates in
// float32), T itself otherwise.
template <class T> struct ComputeType { using type = T; };
template <> struct ComputeType<BFloat16> { using type = float; };
template <> struct ComputeType<Float16> { using type = float; };
template <class T> using compute_t = typename ComputeType<T>::type;
template <class T> constexpr bool is_16bit_v = std::is_same_v<T, BFloat16> || std::is_same_v<T, Float16>;

// float32, float64.
template <class F> decltype(auto) dispatch_floating(DType t, const char* op, F&& f) {
  switch (t) {
    case DType::Float32: return f(TypeTag<float>{});
    case DType::Float64: return f(TypeTag<double>{});
    default: throw Error(str(op, ": expected a float32 or float64 tensor, got ", name(t)));
  }
}

// float32, float64, int64, int32.
template <class F> decltype(auto) dispatch_numeric(DType t, const char* op, F&& f) {
  switch (t) {
    case DType::Float32: return f(TypeTag<float>{});
    case DType::Float64: return f(TypeTag<double>{});
    case DType::Int64: return f(TypeTag<int64_t>{});
    case DType::Int32: return f(TypeTag<int32_t>{});
    default: throw Error(str(op, ": expected a numeric tensor (float32, float64, int64, int32), got ", name(t)));
  }
}

// dispatch_floating and dispatch_numeric with bfloat16 and float16 added, for
// kernels that compute in compute_t<T> (ops/kernel_dtypes.h picks per backend).
template <class F> decltype(auto) dispatch_floating16(DType t, const char* op, F&& f) {
  switch (t) {
    case DType::BFloat16: return f(TypeTag<BFloat16>{});
    case DType::Float16: return f(TypeTag<Float16>{});
    case DType::Float32: return f(TypeTag<float>{});
    case DType::Float64: return f(TypeTag<double>{});
    default: throw Error(str(op, ": expected a floating tensor (float32, float64, bfloat16, float16), got ", name(t)));
  }
}
template <class F> decltype(auto) dispatch_numeric16(DType t, const char* op, F&& f) {
  switch (t) {
    case DType::BFloat16: return f(TypeTag<BFloat16>{});
    case DType::Float16: return f(TypeTag<Float16>{});
    case DType::Float32: return f(TypeTag<float>{});
    case DType::Float64: return f(TypeTag<double>{});
    case DType::Int64: return f(TypeTag<int64_t>{});
    case DType::Int32: return f(TypeTag<int32_t>{});
    default:
      throw Error(
          str(op, ": expected a numeric tensor (float32, float64, bfloat16, float16, int64, int32), got ", name(t)));
  }
}

// Every CPU-computable dtype: the numeric ones and bool.
template <class F> decltype(auto) dispatch_all(DType t, const char* op, F&& f) {
  if (t == DType::Bool) return f(TypeTag<bool>{});
  return dispatch_numeric(t, op, std::forward<F>(f));
}

// Every dtype including the 16-bit storage types (copies and conversions only).
template <class F> decltype(auto) dispatch_storage(DType t, const char* op, F&& f) {
  switch (t) {
    case DType::BFloat16: return f(TypeTag<BFloat16>{});
    case DType::Float16: return f(TypeTag<Float16>{});
    default: return dispatch_all(t, op, std::forward<F>(f));
  }
}

// Converts between any two element types through float/double where needed,
// on the host and on a GPU (core/cuda/copy.cu).
template <class To, class From> KS_HOST_DEVICE inline To convert(From v) {
  if constexpr (std::is_same_v<From, BFloat16> || std::is_same_v<From, Float16>) {
    return convert<To>(static_cast<float>(v));
  } else if constexpr (std::is_same_v<To, BFloat16> || std::is_same_v<To, Float16>) {
    return To(static_cast<float>(v));
  } else {
    return static_cast<To>(v);
  }
}

}  // namespace ks

namespace ks {
constexpr DType kFloat32 = DType::Float32;
constexpr DType kFloat64 = DType::Float64;
constexpr DType kInt64 = DType::Int64;
constexpr DType kInt32 = DType::Int32;
constexpr DType kBool = DType::Bool;
constexpr DType kBFloat16 = DType::BFloat16;
constexpr DType kFloat16 = DType::Float16;
}  // namespace ks
