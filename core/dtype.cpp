// core/dtype.cpp — dtype names, sizes and the float16 conversions.
#include "core/dtype.h"

namespace ks {

size_t itemsize(DType t) {
  switch (t) {
    case DType::Float32: return 4;
    case DType::Float64: return 8;
    case DType::Int64: return 8;
    case DType::Int32: return 4;
    case DType::Bool: return 1;
    case DType::BFloat16: return 2;
    case DType::Float16: return 2;
  }
  return 0;
}

const char* name(DType t) {
  switch (t) {
    case DType::Float32: return "float32";
    case DType::Float64: return "float64";
    case DType::Int64: return "int64";
    case DType::Int32: return "int32";
    case DType::Bool: return "bool";
    case DType::BFloat16: return "bfloat16";
    case DType::Float16: return "float16";
  }
  return "?";
}

DType parse_dtype(const std::string& s) {
  for (DType t :
       {DType::Float32, DType::Float64, DType::Int64, DType::Int32, DType::Bool, DType::BFloat16, DType::Float16})
    if (s == name(t)) return t;
  throw Error(str("unknown dtype '", s, "' (expected float32, float64, int64, int32, bool, bfloat16 or float16)"));
}

// IEEE half: 1 sign, 5 exponent, 10 mantissa bits.
uint16_t float16_bits_of(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t mag = x & 0x7fffffffu;
  if (mag > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);   // NaN
  if (mag >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow -> inf
  if (mag < 0x38800000u) {                                               // subnormal or zero in half
    if (mag < 0x33000000u) return static_cast<uint16_t>(sign);
    uint32_t e = mag >> 23;
    uint32_t m = (mag & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126 - e;  // 14 + (113 - e) - 1
    uint32_t half_m = m >> (shift);
    uint32_t rem = m & ((1u << shift) - 1);
    uint32_t halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (half_m & 1u))) ++half_m;
    return static_cast<uint16_t>(sign | half_m);
  }
  uint32_t r = mag - 0x38000000u;  // rebias exponent 127 -> 15
  r += 0xfffu + ((r >> 13) & 1u);  // round to nearest even
  return static_cast<uint16_t>(sign | (r >> 13));
}

float float16_value_of(uint16_t bits) {
  uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  uint32_t e = (bits >> 10) & 0x1fu;
  uint32_t m = bits & 0x3ffu;
  uint32_t out;
  if (e == 0x1f) {
    out = sign | 0x7f800000u | (m << 13);
  } else if (e == 0) {
    if (m == 0) {
      out = sign;
    } else {  // subnormal: normalise
      int shift = 0;
      while (!(m & 0x400u)) {
        m <<= 1;
        ++shift;
      }
      m &= 0x3ffu;
      out = sign | (static_cast<uint32_t>(113 - shift) << 23) | (m << 13);
    }
  } else {
    out = sign | ((e + 112) << 23) | (m << 13);
  }
  float f;
  std::memcpy(&f, &out, 4);
  return f;
}

}  // namespace ks
