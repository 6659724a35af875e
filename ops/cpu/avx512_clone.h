// ops/cpu/avx512_clone.h — how a CPU kernel loop gets an AVX-512 twin.
//
// The library is compiled for AVX2 (CMakeLists.txt), so one binary runs on any
// x86-64 with AVX2. A hot loop may also be compiled for AVX-512: its body is
// written once as a KS_ROWS_INLINE function, a KS_AVX512_CLONE function calls
// it, and the kernel calls the clone where core/cpu_features.h reports
// AVX-512 (has_avx512()). Everything the body calls from row_math.h and
// vec_math.h is forced inline, so the clone runs the same operations in the
// same order in 512-bit registers: the same bits, faster.
// A kernel's whole task body (a lambda) gets its twins from run_widest: the
// lambda is marked KS_INLINE_LAMBDA, so each of the two callers below holds
// its own copy of it, compiled for its own instruction set.
// Not here: the bf16 GEMM kernels (ops/cpu/gemm/), which need AVX-512 outright.
#pragma once

#include <cstdint>

#include "core/cpu_features.h"

#define KS_ROWS_INLINE [[gnu::always_inline]] inline
#define KS_AVX512_CLONE __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl")))
#define KS_INLINE_LAMBDA __attribute__((always_inline))

namespace ks::cpu {

// Whether the twins run where the CPU has AVX-512: on, unless a test turns
// them off to hold them to the AVX2 code's bits (avx512_clone.cpp).
bool avx512_twins_enabled();
bool set_avx512_twins(bool on);  // returns the previous setting

inline bool has_avx512() {
  static const bool cpu = cpu_features().avx512;
  return cpu && avx512_twins_enabled();
}

template <class Body> KS_AVX512_CLONE void run_avx512(const Body& body, int64_t first, int64_t last) {
  body(first, last);
}
template <class Body> void run_avx2(const Body& body, int64_t first, int64_t last) { body(first, last); }

// body(first, last) (a KS_INLINE_LAMBDA: a parallel_for's range of tasks),
// in 512-bit registers where the CPU has AVX-512.
template <class Body> void run_widest(const Body& body, int64_t first, int64_t last) {
  if (has_avx512())
    run_avx512(body, first, last);
  else
    run_avx2(body, first, last);
}

}  // namespace ks::cpu
