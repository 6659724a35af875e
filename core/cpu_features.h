// core/cpu_features.h — what this CPU can do for bfloat16 GEMMs, found at run
// time, and which kernel the CPU's bf16 GEMMs use (ops/cpu/gemm/gemm.h).
//
// Paths:
//   amx         Advanced Matrix Extensions: TMUL tiles, _tile_dpbf16ps (16×16
//               float32 results per instruction). Needs cpuid's AMX-TILE and
//               AMX-BF16, the OS enabling tile state in XCR0, and Linux's
//               permission: arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA),
//               requested once for the process.
//   avx512bf16  vdpbf16ps on 512-bit vectors (AVX512-BF16 with AVX512F/BW).
//   float32     the operands rounded to bfloat16, then OpenBLAS sgemm: the
//               same results, to float32 summation order, on any x86-64.
// The default is amx where available; else avx512bf16 on AMD (measured on
// Zen 4, which runs vdpbf16ps at twice its float32 FMA rate: 1.5× a float32
// step), else float32 (on Intel without AMX, vdpbf16ps has only the float32
// FMA rate, and OpenBLAS on the rounded operands beats our kernel):
// docs/performance.md has both machines' figures.
// KS_CPU_GEMM=amx|avx512bf16|float32 forces a path (tests exercise each one);
// forcing one the CPU lacks is an error naming what is missing.
// Not here: whether GEMMs run in bf16 at all (core/matmul_precision.h).
#pragma once

#include <string>

namespace ks {

enum class CpuGemmPath { Float32, Avx512Bf16, Amx };

struct CpuFeatures {
  bool avx512 = false;         // AVX512F + BW + VL with the OS saving zmm state
  bool avx512_bf16 = false;    // and AVX512-BF16
  bool amx_bf16 = false;       // AMX-TILE + AMX-BF16 with the OS saving tile state
  bool amx_permitted = false;  // Linux granted this process the tile data state
  std::string amx_refusal;     // why amx_permitted is false, when amx_bf16 is true
  std::string vendor;          // cpuid's vendor string: "GenuineIntel", "AuthenticAMD", ...
  std::string brand;           // the processor brand string, spaces trimmed (may be empty)
};
// Detected once per process (the AMX permission request included).
const CpuFeatures& cpu_features();

const char* cpu_gemm_path_name(CpuGemmPath p);  // "amx", "avx512bf16", "float32"
// Whether this CPU (and OS) can run the path; `why` gets the reason when not.
bool cpu_gemm_path_available(CpuGemmPath p, std::string* why = nullptr);
// The default above for a CPU with features f (a pure function, for tests).
CpuGemmPath default_cpu_gemm_path(const CpuFeatures& f);
// The path bf16 GEMMs use: set_cpu_gemm_path's, else KS_CPU_GEMM's (checked
// on first use), else default_cpu_gemm_path(cpu_features()).
CpuGemmPath cpu_gemm_path();
// Forces a path for the process (tests); throws if it is not available.
void set_cpu_gemm_path(CpuGemmPath p);

}  // namespace ks
