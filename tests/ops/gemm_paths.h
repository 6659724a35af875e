// tests/ops/gemm_paths.h — runs a test body once on each CPU GEMM path (AMX,
// AVX512-BF16, float32) that this CPU can run, forcing it for the body and
// saying by a MESSAGE which paths were skipped and why, so a machine without
// bf16 units reports what it did not test. Not a test file: helpers only.
#pragma once

#include <initializer_list>
#include <string>

#include "core/cpu_features.h"
#include "support/testing.h"

namespace ks::testing {

inline constexpr std::initializer_list<CpuGemmPath> kPackedPaths = {CpuGemmPath::Amx, CpuGemmPath::Avx512Bf16};
inline constexpr std::initializer_list<CpuGemmPath> kAllGemmPaths = {CpuGemmPath::Amx, CpuGemmPath::Avx512Bf16,
                                                                     CpuGemmPath::Float32};

// body(path) with `path` forced (cpu_gemm_path() == path inside), for each of
// `paths` this CPU can run; the process's own choice is put back after, also
// when the body throws. Returns how many paths ran.
template <class F> int for_each_gemm_path(std::initializer_list<CpuGemmPath> paths, F&& body) {
  struct Restore {
    CpuGemmPath original = cpu_gemm_path();
    ~Restore() { set_cpu_gemm_path(original); }
  } restore;
  int ran = 0;
  for (CpuGemmPath path : paths) {
    std::string why;
    if (!cpu_gemm_path_available(path, &why)) {
      MESSAGE("skipped the ", std::string(cpu_gemm_path_name(path)), " path: ", why);
      continue;
    }
    const std::string name = cpu_gemm_path_name(path);
    CAPTURE(name);
    set_cpu_gemm_path(path);
    body(path);
    ++ran;
  }
  return ran;
}

}  // namespace ks::testing
