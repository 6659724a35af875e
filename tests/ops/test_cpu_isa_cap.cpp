// tests/ops/test_cpu_isa_cap.cpp — KS_CPU_ISA (core/cpu_features.h): a cap
// turns off the features above it and nothing else, a cap above the CPU
// changes nothing, the words name the cap where it chose the float32 GEMM
// path, a bad value is an error naming the four; and a process started under
// KS_CPU_ISA=avx2 (tests/CMakeLists.txt runs the suites with AVX-512 twins
// so) runs no AVX-512 kernel: no AVX-512 features, the float32 GEMM path,
// OpenBLAS's Haswell kernels where OPENBLAS_CORETYPE is unset.
// Not here: the kernels' own AVX2 results (their tests, run again under the cap).
#include <strings.h>
#include <cstdlib>
#include <optional>
#include <string>

#include "core/cpu_features.h"
#include "ops/cpu/gemm/gemm.h"
#include "support/testing.h"

using namespace ks;

namespace {

CpuFeatures sapphire_rapids() {
  CpuFeatures f;
  f.vendor = "GenuineIntel";
  f.avx2 = f.avx512 = f.avx512_bf16 = f.amx_bf16 = f.amx_permitted = true;
  return f;
}

CpuFeatures zen4() {
  CpuFeatures f;
  f.vendor = "AuthenticAMD";
  f.avx2 = f.avx512 = f.avx512_bf16 = true;
  return f;
}

}  // namespace

TEST_CASE("KS_CPU_ISA: a cap turns off what lies above it, and the words name it") {
  CHECK(std::string(widest_isa_name(sapphire_rapids())) == "amx");
  const CpuFeatures as_avx2 = capped_features(sapphire_rapids(), CpuIsa::Avx2);
  CHECK(as_avx2.avx2);
  CHECK_FALSE(as_avx2.avx512);
  CHECK_FALSE(as_avx2.avx512_bf16);
  CHECK_FALSE(as_avx2.amx_bf16);
  CHECK_FALSE(as_avx2.amx_permitted);
  CHECK(as_avx2.vendor == "GenuineIntel");
  CHECK(as_avx2.capped_from == "amx");
  CHECK(cpu_isa_report(as_avx2) == "avx2 (capped by KS_CPU_ISA; the CPU has amx)");
  CHECK(default_cpu_gemm_path(as_avx2) == CpuGemmPath::Float32);
  CHECK(float32_path_reason(as_avx2) == "KS_CPU_ISA caps the kernels at avx2 (this CPU has amx)");

  // Zen 4 at avx512: AVX-512 stays, its bf16 kernel goes.
  const CpuFeatures as_avx512 = capped_features(zen4(), CpuIsa::Avx512);
  CHECK(as_avx512.avx512);
  CHECK_FALSE(as_avx512.avx512_bf16);
  CHECK(as_avx512.capped_from == "avx512bf16");
  CHECK(default_cpu_gemm_path(as_avx512) == CpuGemmPath::Float32);
  CHECK(float32_path_reason(as_avx512) == "KS_CPU_ISA caps the kernels at avx512 (this CPU has avx512bf16)");

  // A cap at or above what the CPU has changes nothing.
  for (CpuIsa cap : {CpuIsa::Avx512Bf16, CpuIsa::Amx}) {
    const CpuFeatures same = capped_features(zen4(), cap);
    CHECK(same.avx512_bf16);
    CHECK(same.capped_from.empty());
    CHECK(cpu_isa_report(same) == "avx512bf16");
    CHECK(default_cpu_gemm_path(same) == CpuGemmPath::Avx512Bf16);
  }
  CpuFeatures zen3;
  zen3.vendor = "AuthenticAMD";
  zen3.avx2 = true;
  CHECK(capped_features(zen3, CpuIsa::Avx2).capped_from.empty());
  CHECK(float32_path_reason(capped_features(zen3, CpuIsa::Avx2)) == "this CPU has no bf16 units (AVX2)");
  CHECK(std::string(widest_isa_name(CpuFeatures{})) == "none");
}

TEST_CASE("KS_CPU_ISA: the four words, and an error naming them for anything else") {
  std::string error;
  for (CpuIsa isa : {CpuIsa::Avx2, CpuIsa::Avx512, CpuIsa::Avx512Bf16, CpuIsa::Amx}) {
    CAPTURE(std::string(cpu_isa_name(isa)));
    CHECK(parse_cpu_isa(cpu_isa_name(isa), &error) == isa);
    CHECK(error.empty());
  }
  CHECK(std::string(cpu_isa_name(CpuIsa::Avx512Bf16)) == "avx512bf16");
  for (const char* bad : {"sse4", "AVX2", "avx512_bf16", ""}) {
    CAPTURE(bad);
    error.clear();
    CHECK_FALSE(parse_cpu_isa(bad, &error).has_value());
    CHECK(error == std::string("KS_CPU_ISA: expected avx2, avx512, avx512bf16 or amx, got '") + bad + "'");
  }
}

TEST_CASE("KS_CPU_ISA: this process runs under its cap") {
  std::string error;
  const std::optional<CpuIsa> cap = cpu_isa_cap(&error);
  REQUIRE(error.empty());
  const CpuFeatures& f = cpu_features();
  if (!cap) {
    CHECK(f.capped_from.empty());
    MESSAGE("KS_CPU_ISA is unset: this run uses the CPU's own ", cpu_isa_report(f),
            " (ctest runs the kernels' suites again under KS_CPU_ISA=avx2)");
    return;
  }
  MESSAGE("KS_CPU_ISA=", std::string(cpu_isa_name(*cap)), ": ", cpu_isa_report(f), ", OpenBLAS ",
          std::string(cpu::blas_kernels_name()));
  if (*cap >= CpuIsa::Avx512) return;
  CHECK_FALSE(f.avx512);
  CHECK_FALSE(f.avx512_bf16);
  CHECK_FALSE(f.amx_bf16);
  CHECK(cpu_gemm_path() == CpuGemmPath::Float32);
  CHECK_FALSE(cpu_gemm_path_available(CpuGemmPath::Avx512Bf16));
  CHECK_FALSE(cpu_gemm_path_available(CpuGemmPath::Amx));
  if (!std::getenv("OPENBLAS_CORETYPE"))
    for (const char* avx512_core : {"SkylakeX", "Cooperlake", "SapphireRapids"})
      CHECK(strcasecmp(cpu::blas_kernels_name(), avx512_core) != 0);
}
