// ops/vec_math.h — float32 exp, log, tanh and erf written so that GCC
// vectorises the loops that call them (AVX2: 8 lanes), for the hot
// elementwise kernels (activations, their backwards, softmax-like code).
//
// Each is branch-free: clamps and selects between values already computed,
// bit tricks for 2^n, polynomials in Horner form. Every multiply-add is
// written as std::fma, so the bits do not depend on where a compiler chooses
// to fuse (GCC at -O2 fused exactly these, so the float32 results are what
// they were; GCC at -O0 fuses nothing and clang fuses elsewhere): the
// Release, Debug and sanitizer builds, and any inlining context, compute the
// same values (checked over all 2^32 inputs against the previous source as
// GCC -O2 compiled it, 2026-12-06). With -fno-math-errno and
// -fno-trapping-math (set in CMakeLists.txt) a loop `o[i] = vmath::exp(x[i])`
// compiles to packed instructions. Accuracy, checked against the float64 libm
// in tests/ops/test_unary.cpp: relative error below 1e-6 (a few ulp) over
// the whole float range, with inf, -inf, NaN, 0 and denormal inputs handled
// like libm. The double overloads simply call std:: (float64 serves
// gradchecks and references, where exactness beats speed).
//
// Not here: a general pow, or functions nobody runs per element per step.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

// Forced inline: a call left inside a loop stops its vectorisation, and GCC's
// inliner gives up on these bodies once a file instantiates many loops.
#define KS_VMATH_INLINE [[gnu::always_inline]] inline

namespace ks::cpu::vmath {

// exp(x) = 2^n * exp(r), n = round(x / ln 2), |r| <= ln2 / 2; exp(r) by the
// Cephes minimax polynomial. 2^n is applied as two factors 2^(n/2) 2^(n - n/2)
// so that results near FLT_MAX and in the denormal range come out right.
KS_VMATH_INLINE float exp(float x) {
  float xc = x < -104.f ? -104.f : x;  // exp(-104) is below the smallest denormal
  xc = xc > 89.f ? 89.f : xc;          // exp(89) overflows to inf anyway
  // Adding 1.5 * 2^23 rounds to an integer and leaves it in the low mantissa bits.
  const float k = std::fma(xc, 1.44269504088896341f, 12582912.f);
  const float n = k - 12582912.f;
  const uint32_t nbits = std::bit_cast<uint32_t>(k) - 0x4B400000u;  // n, two's complement
  float r = std::fma(-n, 0.693359375f, xc);                         // ln 2 split in two for an exact first product
  r = std::fma(n, 2.12194440e-4f, r);
  float p = 1.9875691500E-4f;
  p = std::fma(p, r, 1.3981999507E-3f);
  p = std::fma(p, r, 8.3334519073E-3f);
  p = std::fma(p, r, 4.1665795894E-2f);
  p = std::fma(p, r, 1.6666665459E-1f);
  p = std::fma(p, r, 5.0000001201E-1f);
  const float y = std::fma(p, r * r, r) + 1.0f;
  const uint32_t n1 = uint32_t(int32_t(nbits) >> 1), n2 = nbits - n1;
  const float s1 = std::bit_cast<float>((n1 + 127u) << 23);
  const float s2 = std::bit_cast<float>((n2 + 127u) << 23);
  return y * s1 * s2;  // a NaN x stays NaN through every step
}

// log(x) = e ln 2 + log(m), m in [sqrt(1/2), sqrt(2)); log(1 + f) by the
// Cephes polynomial. Denormals are scaled by 2^23 first.
KS_VMATH_INLINE float log(float x) {
  const bool denormal = x < 1.17549435e-38f;
  const float scaled = x * 8388608.f;
  const uint32_t bits = std::bit_cast<uint32_t>(denormal ? scaled : x);
  const float m = std::bit_cast<float>((bits & 0x007fffffu) | 0x3f000000u);  // [0.5, 1)
  float e = float(int32_t((bits >> 23) & 0xffu) - 126) - (denormal ? 23.f : 0.f);
  const bool low = m < 0.707106781186547524f;
  const float f_low = m + m - 1.0f, f_high = m - 1.0f;
  const float f = low ? f_low : f_high;
  e = low ? e - 1.0f : e;
  const float z = f * f;
  float p = 7.0376836292E-2f;
  p = std::fma(p, f, -1.1514610310E-1f);
  p = std::fma(p, f, 1.1676998740E-1f);
  p = std::fma(p, f, -1.2420140846E-1f);
  p = std::fma(p, f, 1.4249322787E-1f);
  p = std::fma(p, f, -1.6668057665E-1f);
  p = std::fma(p, f, 2.0000714765E-1f);
  p = std::fma(p, f, -2.4999993993E-1f);
  p = std::fma(p, f, 3.3333331174E-1f);
  float y = p * f * z;
  y = std::fma(-2.12194440e-4f, e, y);
  y = std::fma(-0.5f, z, y);
  float r = std::fma(0.693359375f, e, f + y);
  r = x == 0.f ? -INFINITY : r;
  r = x < 0.f ? NAN : r;
  r = x == INFINITY ? INFINITY : r;
  return x != x ? x : r;
}

// tanh by a 13/6 rational minimax approximation (as in Eigen's fast tanh);
// beyond |x| = 7.9 float32 tanh is ±1 to within the approximation's error.
KS_VMATH_INLINE float tanh(float a) {
  float x = a < -7.90531110763549805f ? -7.90531110763549805f : a;
  x = x > 7.90531110763549805f ? 7.90531110763549805f : x;
  const float x2 = x * x;
  float p = std::fma(x2, -2.76076847742355e-16f, 2.00018790482477e-13f);
  p = std::fma(x2, p, -8.60467152213735e-11f);
  p = std::fma(x2, p, 5.12229709037114e-08f);
  p = std::fma(x2, p, 1.48572235717979e-05f);
  p = std::fma(x2, p, 6.37261928875436e-04f);
  p = std::fma(x2, p, 4.89352455891786e-03f);
  p = x * p;
  float q = std::fma(x2, 1.19825839466702e-06f, 1.18534705686654e-04f);
  q = std::fma(x2, q, 2.26843463243900e-03f);
  q = std::fma(x2, q, 4.89352518554385e-03f);
  const float t = p / q;
  // Beyond the clamp ±1 itself: the polynomial there gives 1 − 2.4e-7, and
  // a compiler that folds the clamped branch to a constant (GCC does, in
  // some loops) would give ±1 in one place and that in another.
  return a > 7.90531110763549805f ? 1.f : a < -7.90531110763549805f ? -1.f : t;
}

// erf by a 13/8 rational minimax approximation on [-4, 4] (as in Eigen);
// beyond, float32 erf is ±1.
KS_VMATH_INLINE float erf(float a) {
  float x = a < -4.f ? -4.f : a;
  x = x > 4.f ? 4.f : x;
  const float x2 = x * x;
  float p = std::fma(x2, -2.72614225801306e-10f, 2.77068142495902e-08f);
  p = std::fma(x2, p, -2.10102402082508e-06f);
  p = std::fma(x2, p, -5.69250639462346e-05f);
  p = std::fma(x2, p, -7.34990630326855e-04f);
  p = std::fma(x2, p, -2.95459980854025e-03f);
  p = std::fma(x2, p, -1.60960333262415e-02f);
  p = x * p;
  float q = std::fma(x2, -1.45660718464996e-05f, -2.13374055278905e-04f);
  q = std::fma(x2, q, -1.68282697438203e-03f);
  q = std::fma(x2, q, -7.37332916720468e-03f);
  q = std::fma(x2, q, -1.42647390514189e-02f);
  return p / q;
}

KS_VMATH_INLINE double exp(double x) { return std::exp(x); }
KS_VMATH_INLINE double log(double x) { return std::log(x); }
KS_VMATH_INLINE double tanh(double x) { return std::tanh(x); }
KS_VMATH_INLINE double erf(double x) { return std::erf(x); }

// exp(x) - 1: float64 keeps its digits near 0; float32 is accurate in absolute
// terms (1e-7), which is what ELU needs.
KS_VMATH_INLINE float expm1(float x) { return exp(x) - 1.0f; }
KS_VMATH_INLINE double expm1(double x) { return std::expm1(x); }

template <class T> KS_VMATH_INLINE T sigmoid(T x) { return T(1) / (T(1) + exp(-x)); }

}  // namespace ks::cpu::vmath
