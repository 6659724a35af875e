// ops/kernel_math.h — the math functions of the formulas that the CPU and the
// CUDA kernels share (ops/*_formulas.h): one name per function, compiled to
// the right implementation for each side.
//
//   host (ops/cpu kernels): float32 exp, log, tanh, erf from ops/vec_math.h,
//     written so that GCC vectorises the loops that call them; float64 and
//     everything else from <cmath>;
//   device (ops/cuda kernels, nvcc's __CUDA_ARCH__ pass): CUDA's math library
//     (expf, logf, ... , full accuracy, no fast-math intrinsics).
// float32 results of the two sides therefore agree to a few ulp, not bit for
// bit; float64 agrees to the last bit or two. The tests bound both.
//
// A formula written with these runs unchanged in both backends: the backends
// keep their own loops (ops/cpu/loops.h, core/cuda/loops.cuh), the formula
// lives once. Not here: loops, reductions across threads, anything per
// backend that is not a scalar function.
#pragma once

#include <cmath>

#include "core/host_device.h"
#include "ops/vec_math.h"

#if defined(__CUDA_ARCH__)
#define KS_KMATH_INLINE __host__ __device__ __forceinline__
#elif defined(__CUDACC__)
#define KS_KMATH_INLINE __host__ __device__ [[gnu::always_inline]] inline
#else
#define KS_KMATH_INLINE [[gnu::always_inline]] inline
#endif

namespace ks::kmath {

#if defined(__CUDA_ARCH__)
KS_KMATH_INLINE float exp(float x) { return ::expf(x); }
KS_KMATH_INLINE float log(float x) { return ::logf(x); }
KS_KMATH_INLINE float tanh(float x) { return ::tanhf(x); }
KS_KMATH_INLINE float erf(float x) { return ::erff(x); }
KS_KMATH_INLINE float expm1(float x) { return ::expm1f(x); }
#else
KS_KMATH_INLINE float exp(float x) { return cpu::vmath::exp(x); }
KS_KMATH_INLINE float log(float x) { return cpu::vmath::log(x); }
KS_KMATH_INLINE float tanh(float x) { return cpu::vmath::tanh(x); }
KS_KMATH_INLINE float erf(float x) { return cpu::vmath::erf(x); }
KS_KMATH_INLINE float expm1(float x) { return cpu::vmath::expm1(x); }
#endif
KS_KMATH_INLINE double exp(double x) { return ::exp(x); }
KS_KMATH_INLINE double log(double x) { return ::log(x); }
KS_KMATH_INLINE double tanh(double x) { return ::tanh(x); }
KS_KMATH_INLINE double erf(double x) { return ::erf(x); }
KS_KMATH_INLINE double expm1(double x) { return ::expm1(x); }

// a·b + c rounded once. A formula spells its multiply-adds with this where
// its bits must not depend on the compiler: left to -ffp-contract, GCC at
// -O2 fuses where it finds a product used once, GCC at -O0 nowhere, clang
// elsewhere again (ops/vec_math.h does the same for its polynomials).
KS_KMATH_INLINE float fma(float a, float b, float c) { return ::fmaf(a, b, c); }
KS_KMATH_INLINE double fma(double a, double b, double c) { return ::fma(a, b, c); }

// Both sides vectorise or inline these as they are.
KS_KMATH_INLINE float sqrt(float x) { return ::sqrtf(x); }
KS_KMATH_INLINE double sqrt(double x) { return ::sqrt(x); }
KS_KMATH_INLINE float fabs(float x) { return ::fabsf(x); }
KS_KMATH_INLINE double fabs(double x) { return ::fabs(x); }
KS_KMATH_INLINE float pow(float x, float y) { return ::powf(x, y); }
KS_KMATH_INLINE double pow(double x, double y) { return ::pow(x, y); }

template <class T> KS_KMATH_INLINE T sigmoid(T x) { return T(1) / (T(1) + exp(-x)); }

}  // namespace ks::kmath
