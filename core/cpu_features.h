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
//   float32     no bf16 kernel: a bf16 GEMM runs as the float32 one
//               (OpenBLAS sgemm on the float32 operands, no rounding), so
//               under MatmulPrecision::BFloat16 results equal float32's bit
//               for bit, at float32's speed, on any x86-64
//               (core/matmul_precision.h says what bf16 then means).
// The default is amx where available; else avx512bf16 on AMD (measured on
// Zen 4, which runs vdpbf16ps at twice its float32 FMA rate: 1.5× a float32
// step), else float32 (on Intel without AMX, vdpbf16ps has only the float32
// FMA rate, and OpenBLAS on the rounded operands beats our kernel):
// docs/performance.md has both machines' figures.
// KS_CPU_GEMM=amx|avx512bf16|float32 forces a path (tests exercise each one;
// float32 reproduces a CPU without bf16 units on any machine); forcing one
// the CPU lacks is an error naming what is missing.
//
// KS_CPU_ISA=avx2|avx512|avx512bf16|amx caps the instruction sets Keystone's
// own kernels use, as oneDNN's ONEDNN_MAX_CPU_ISA does, so that one machine
// runs what a narrower one would: under avx2 no AVX-512 twin of a loop runs,
// no bf16 GEMM kernel, and OpenBLAS takes its Haswell (AVX2) kernels where
// OPENBLAS_CORETYPE is unset (ops/cpu/gemm/gemm.cpp). The features below are
// the capped ones; `keystone info --machine` and every run record say so. A
// cap wider than the CPU changes nothing. The library itself is compiled for
// AVX2 (KS_NATIVE_ARCH), so nothing narrower can be asked for.
// Not here: whether GEMMs run in bf16 at all (core/matmul_precision.h).
#pragma once

#include <optional>
#include <string>

namespace ks {

enum class CpuGemmPath { Float32, Avx512Bf16, Amx };

// The instruction-set levels Keystone's kernels tell apart, narrowest first.
enum class CpuIsa { Avx2, Avx512, Avx512Bf16, Amx };

struct CpuFeatures {
  bool avx2 = false;           // AVX2 + FMA with the OS saving ymm state
  bool avx512 = false;         // AVX512F + BW + VL with the OS saving zmm state
  bool avx512_bf16 = false;    // and AVX512-BF16
  bool amx_bf16 = false;       // AMX-TILE + AMX-BF16 with the OS saving tile state
  bool amx_permitted = false;  // Linux granted this process the tile data state
  std::string amx_refusal;     // why amx_permitted is false, when amx_bf16 is true
  std::string vendor;          // cpuid's vendor string: "GenuineIntel", "AuthenticAMD", ...
  std::string brand;           // the processor brand string, spaces trimmed (may be empty)
  std::string capped_from;     // the widest level detected, where KS_CPU_ISA took it lower ("" otherwise)
};
// Detected once per process, KS_CPU_ISA's cap applied (the AMX permission
// request included, unless the cap rules AMX out). Throws for a bad KS_CPU_ISA.
const CpuFeatures& cpu_features();

// "avx2", "avx512", "avx512bf16", "amx".
const char* cpu_isa_name(CpuIsa isa);
// The widest level features f allow: one of the above, or "none" (no AVX2).
const char* widest_isa_name(const CpuFeatures& f);
// The level named by `word`, or nothing; `error` then gets the message that
// names the four words. Never throws: OpenBLAS's set-up reads KS_CPU_ISA
// before main, where an exception would end the process.
std::optional<CpuIsa> parse_cpu_isa(const std::string& word, std::string* error);
// KS_CPU_ISA's level, or nothing when it is unset, empty or bad (`error`
// tells the last two apart).
std::optional<CpuIsa> cpu_isa_cap(std::string* error = nullptr);
// f with every feature above `cap` turned off and capped_from set where that
// turned one off (a pure function, for tests).
CpuFeatures capped_features(CpuFeatures f, CpuIsa cap);
// For reports: the widest level in use, and the CPU's own where KS_CPU_ISA
// capped it ("avx2 (capped by KS_CPU_ISA; the CPU has avx512bf16)").
std::string cpu_isa_report(const CpuFeatures& f);

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
// Whether cpu_gemm_path() was forced (set_cpu_gemm_path, KS_CPU_GEMM) rather than chosen by default.
bool cpu_gemm_path_forced();

// Why default_cpu_gemm_path(f) is the float32 path, in words ("" when it is
// not): "this CPU has no bf16 units (AVX2)", "this CPU has no bf16 units
// (AVX-512 without AVX512-BF16)", "Intel without AMX: its AVX512-BF16 is no
// faster than float32", or Linux's AMX refusal. A pure function, for tests.
std::string float32_path_reason(const CpuFeatures& f);
// What a float32 GEMM under MatmulPrecision::BFloat16 computes in on this
// CPU now, and why, for `keystone info --machine`, bench and the run folder:
// "bf16 (amx path)", "bf16 (avx512bf16 path)", or "float32: <why>" where why
// is float32_path_reason's or "KS_CPU_GEMM chose the float32 path" (forced).
std::string cpu_bf16_matmuls();

}  // namespace ks
