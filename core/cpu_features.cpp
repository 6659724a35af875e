// core/cpu_features.cpp — cpuid/xgetbv detection, the Linux AMX permission
// request, and the choice of bf16 GEMM path (core/cpu_features.h).
#include "core/cpu_features.h"

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "core/error.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace ks {
namespace {

#if defined(__x86_64__)
// Linux's arch_prctl codes for the dynamically enabled tile data state (asm/prctl.h).
constexpr int kArchReqXcompPerm = 0x1023;
constexpr int kXfeatureXtiledata = 18;

uint64_t xgetbv0() {
  uint32_t lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (uint64_t(hi) << 32) | lo;
}

CpuFeatures detect() {
  CpuFeatures f;
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) return f;  // no OSXSAVE: no xgetbv
  const uint64_t xcr0 = xgetbv0();
  const bool zmm_state = (xcr0 & 0xe6) == 0xe6;         // SSE, AVX, opmask, ZMM_Hi256, Hi16_ZMM
  const bool tile_state = (xcr0 & (3u << 17)) == (3u << 17);  // XTILECFG and XTILEDATA
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return f;
  const bool avx512f = b & (1u << 16), avx512bw = b & (1u << 30), avx512vl = b & (1u << 31);
  const bool amx_bf16 = d & (1u << 22), amx_tile = d & (1u << 24);
  unsigned a1 = 0, b1, c1, d1;
  const bool leaf7_1 = __get_cpuid_count(7, 1, &a1, &b1, &c1, &d1);
  f.avx512 = zmm_state && avx512f && avx512bw && avx512vl;
  f.avx512_bf16 = f.avx512 && leaf7_1 && (a1 & (1u << 5));
  f.amx_bf16 = amx_tile && amx_bf16 && tile_state;
  if (f.amx_bf16) {
    if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0)
      f.amx_permitted = true;
    else
      f.amx_refusal = str("Linux refused the tile data permission (arch_prctl ARCH_REQ_XCOMP_PERM: ",
                          std::strerror(errno), ")");
  }
  return f;
}
#else
CpuFeatures detect() { return {}; }
#endif

std::atomic<int> g_forced{-1};  // a CpuGemmPath set by set_cpu_gemm_path, or -1

CpuGemmPath parse_path(const std::string& s) {
  if (s == "amx") return CpuGemmPath::Amx;
  if (s == "avx512bf16") return CpuGemmPath::Avx512Bf16;
  if (s == "float32") return CpuGemmPath::Float32;
  throw Error(str("KS_CPU_GEMM: expected amx, avx512bf16 or float32, got '", s.substr(0, 64), "'"));
}

// AMX when there is AMX. Without it the float32 path: on the machine
// measured (docs/performance.md) OpenBLAS sgemm on the rounded operands ran
// 1.4× faster than our AVX512-BF16 kernel, which stays available through
// KS_CPU_GEMM=avx512bf16.
CpuGemmPath best_path() {
  if (cpu_gemm_path_available(CpuGemmPath::Amx)) return CpuGemmPath::Amx;
  return CpuGemmPath::Float32;
}

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = detect();
  return features;
}

const char* cpu_gemm_path_name(CpuGemmPath p) {
  switch (p) {
    case CpuGemmPath::Amx: return "amx";
    case CpuGemmPath::Avx512Bf16: return "avx512bf16";
    case CpuGemmPath::Float32: return "float32";
  }
  return "float32";
}

bool cpu_gemm_path_available(CpuGemmPath p, std::string* why) {
  const CpuFeatures& f = cpu_features();
  std::string reason;
  if (p == CpuGemmPath::Amx && !f.amx_bf16)
    reason = "this CPU (or its OS) has no AMX-TILE/AMX-BF16 tile state";
  else if (p == CpuGemmPath::Amx && !f.amx_permitted)
    reason = f.amx_refusal;
  else if (p == CpuGemmPath::Avx512Bf16 && !f.avx512_bf16)
    reason = "this CPU (or its OS) has no AVX512-BF16";
  if (why) *why = reason;
  return reason.empty();
}

CpuGemmPath cpu_gemm_path() {
  const int forced = g_forced.load();
  if (forced >= 0) return CpuGemmPath(forced);
  static const CpuGemmPath chosen = [] {
    const char* env = std::getenv("KS_CPU_GEMM");
    if (!env || !*env) return best_path();
    const CpuGemmPath p = parse_path(env);
    std::string why;
    KS_CHECK(cpu_gemm_path_available(p, &why), "KS_CPU_GEMM=", env, ": ", why);
    return p;
  }();
  return chosen;
}

void set_cpu_gemm_path(CpuGemmPath p) {
  std::string why;
  KS_CHECK(cpu_gemm_path_available(p, &why), "set_cpu_gemm_path(", cpu_gemm_path_name(p), "): ", why);
  g_forced = int(p);
}

}  // namespace ks
