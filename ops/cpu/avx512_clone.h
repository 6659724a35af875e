// ops/cpu/avx512_clone.h — how a CPU kernel loop gets an AVX-512 twin.
//
// The library is compiled for AVX2 (CMakeLists.txt), so one binary runs on any
// x86-64 with AVX2. A hot loop may also be compiled for AVX-512: its body is
// written once as a KS_ROWS_INLINE function, a KS_AVX512_CLONE function calls
// it, and the kernel calls the clone where core/cpu_features.h reports
// AVX-512 (has_avx512()). Everything the body calls from row_math.h and
// vec_math.h is forced inline, so the clone runs the same operations in the
// same order in 512-bit registers: the same bits, faster.
// Not here: the bf16 GEMM kernels (ops/cpu/gemm/), which need AVX-512 outright.
#pragma once

#include "core/cpu_features.h"

#define KS_ROWS_INLINE [[gnu::always_inline]] inline
#define KS_AVX512_CLONE __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl")))

namespace ks::cpu {

inline bool has_avx512() {
  static const bool yes = cpu_features().avx512;
  return yes;
}

}  // namespace ks::cpu
