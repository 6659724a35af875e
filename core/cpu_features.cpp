// core/cpu_features.cpp — cpuid/xgetbv detection, KS_CPU_ISA's cap, the
// Linux AMX permission request, and the choice of bf16 GEMM path
// (core/cpu_features.h).
#include "core/cpu_features.h"

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "core/enum_words.h"
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

// Trailing and repeated spaces trimmed: brand strings are padded.
std::string trimmed(const char* s) {
  std::string out;
  for (const char* p = s; *p; ++p)
    if (*p != ' ' || (!out.empty() && out.back() != ' ')) out += *p;
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

void identify(CpuFeatures& f) {
  unsigned r[4];
  if (__get_cpuid(0, &r[0], &r[1], &r[2], &r[3])) {
    char vendor[13] = {};
    std::memcpy(vendor, &r[1], 4);  // ebx, edx, ecx
    std::memcpy(vendor + 4, &r[3], 4);
    std::memcpy(vendor + 8, &r[2], 4);
    f.vendor = vendor;
  }
  unsigned top = __get_cpuid_max(0x80000000u, nullptr);
  if (top >= 0x80000004u) {
    char brand[49] = {};
    for (unsigned leaf = 0; leaf < 3; ++leaf) {
      __get_cpuid(0x80000002u + leaf, &r[0], &r[1], &r[2], &r[3]);
      std::memcpy(brand + 16 * leaf, r, 16);
    }
    f.brand = trimmed(brand);
  }
}

CpuFeatures detect() {
  CpuFeatures f;
  identify(f);
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) return f;  // no OSXSAVE: no xgetbv
  const unsigned c_fma = c;
  const uint64_t xcr0 = xgetbv0();
  const bool zmm_state = (xcr0 & 0xe6) == 0xe6;               // SSE, AVX, opmask, ZMM_Hi256, Hi16_ZMM
  const bool tile_state = (xcr0 & (3u << 17)) == (3u << 17);  // XTILECFG and XTILEDATA
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return f;
  const bool avx512f = b & (1u << 16), avx512bw = b & (1u << 30), avx512vl = b & (1u << 31);
  const bool amx_bf16 = d & (1u << 22), amx_tile = d & (1u << 24);
  unsigned a1 = 0, b1, c1, d1;
  const bool leaf7_1 = __get_cpuid_count(7, 1, &a1, &b1, &c1, &d1);
  const bool ymm_state = (xcr0 & 0x6) == 0x6;  // SSE, AVX
  f.avx2 = ymm_state && (b & (1u << 5)) && (c_fma & (1u << 12));
  f.avx512 = zmm_state && avx512f && avx512bw && avx512vl;
  f.avx512_bf16 = f.avx512 && leaf7_1 && (a1 & (1u << 5));
  f.amx_bf16 = amx_tile && amx_bf16 && tile_state;
  return f;
}

// After the cap: a process capped below AMX never asks for the tile state.
void request_amx_permission(CpuFeatures& f) {
  if (!f.amx_bf16) return;
  if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0)
    f.amx_permitted = true;
  else
    f.amx_refusal =
        str("Linux refused the tile data permission (arch_prctl ARCH_REQ_XCOMP_PERM: ", std::strerror(errno), ")");
}
#else
CpuFeatures detect() { return {}; }
void request_amx_permission(CpuFeatures&) {}
#endif

constexpr EnumWord<CpuIsa> kIsaWords[] = {
    {CpuIsa::Avx2, "avx2"}, {CpuIsa::Avx512, "avx512"}, {CpuIsa::Avx512Bf16, "avx512bf16"}, {CpuIsa::Amx, "amx"}};

// Whether KS_CPU_ISA, and not the CPU, is why f lacks level `isa`.
bool capped_below(const CpuFeatures& f, CpuIsa isa) {
  if (f.capped_from.empty()) return false;
  const std::optional<CpuIsa> had = value_of(f.capped_from, kIsaWords);
  return had && *had >= isa;
}

std::string cap_words(const CpuFeatures& f) {
  return str("KS_CPU_ISA caps the kernels at ", widest_isa_name(f), " (this CPU has ", f.capped_from, ")");
}

const std::string kForcedFloat32 = "KS_CPU_GEMM chose the float32 path";

std::atomic<int> g_forced{-1};  // a CpuGemmPath set by set_cpu_gemm_path, or -1

constexpr EnumWord<CpuGemmPath> kPathWords[] = {
    {CpuGemmPath::Amx, "amx"}, {CpuGemmPath::Avx512Bf16, "avx512bf16"}, {CpuGemmPath::Float32, "float32"}};

CpuGemmPath parse_path(const std::string& s) {
  if (std::optional<CpuGemmPath> p = value_of(s, kPathWords)) return *p;
  throw Error(str("KS_CPU_GEMM: expected amx, avx512bf16 or float32, got '", s.substr(0, 64), "'"));
}

}  // namespace

// AMX when there is AMX. Else AVX512-BF16 on AMD: on Zen 4 a vdpbf16ps does
// twice the multiply-adds of a float32 FMA per cycle, and the bf16 step ran
// 1.5× the float32 one. Else (Intel without AMX, such as Cooper Lake) the
// float32 path: on Sapphire Rapids vdpbf16ps has only the FMA's rate and
// OpenBLAS sgemm on the rounded operands ran 1.4× faster than our kernel.
// Measured in docs/performance.md; KS_CPU_GEMM overrides.
CpuGemmPath default_cpu_gemm_path(const CpuFeatures& f) {
  if (f.amx_bf16 && f.amx_permitted) return CpuGemmPath::Amx;
  if (f.vendor == "AuthenticAMD" && f.avx512_bf16) return CpuGemmPath::Avx512Bf16;
  return CpuGemmPath::Float32;
}

const char* cpu_isa_name(CpuIsa isa) { return word_of(isa, kIsaWords, "avx2"); }

const char* widest_isa_name(const CpuFeatures& f) {
  if (f.amx_bf16) return cpu_isa_name(CpuIsa::Amx);
  if (f.avx512_bf16) return cpu_isa_name(CpuIsa::Avx512Bf16);
  if (f.avx512) return cpu_isa_name(CpuIsa::Avx512);
  return f.avx2 ? cpu_isa_name(CpuIsa::Avx2) : "none";
}

std::optional<CpuIsa> parse_cpu_isa(const std::string& word, std::string* error) {
  const std::optional<CpuIsa> isa = value_of(word, kIsaWords);
  if (!isa && error)
    *error = str("KS_CPU_ISA: expected avx2, avx512, avx512bf16 or amx, got '", word.substr(0, 64), "'");
  return isa;
}

std::optional<CpuIsa> cpu_isa_cap(std::string* error) {
  const char* env = std::getenv("KS_CPU_ISA");
  if (!env || !*env) return std::nullopt;
  return parse_cpu_isa(env, error);
}

CpuFeatures capped_features(CpuFeatures f, CpuIsa cap) {
  const std::string widest = widest_isa_name(f);
  if (cap < CpuIsa::Amx) {
    f.amx_bf16 = f.amx_permitted = false;
    f.amx_refusal.clear();
  }
  if (cap < CpuIsa::Avx512Bf16) f.avx512_bf16 = false;
  if (cap < CpuIsa::Avx512) f.avx512 = false;
  if (widest != widest_isa_name(f)) f.capped_from = widest;
  return f;
}

std::string cpu_isa_report(const CpuFeatures& f) {
  if (f.capped_from.empty()) return widest_isa_name(f);
  return str(widest_isa_name(f), " (capped by KS_CPU_ISA; the CPU has ", f.capped_from, ")");
}

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = [] {
    std::string error;
    const std::optional<CpuIsa> cap = cpu_isa_cap(&error);
    KS_CHECK(error.empty(), error);
    CpuFeatures f = detect();
    if (cap) f = capped_features(std::move(f), *cap);
    request_amx_permission(f);
    return f;
  }();
  return features;
}

const char* cpu_gemm_path_name(CpuGemmPath p) { return word_of(p, kPathWords, "float32"); }

std::string float32_path_reason(const CpuFeatures& f) {
  if (default_cpu_gemm_path(f) != CpuGemmPath::Float32) return "";
  if (capped_below(f, CpuIsa::Avx512Bf16)) return cap_words(f);
  if (f.amx_bf16 && !f.amx_permitted) return f.amx_refusal.empty() ? "Linux refused the AMX tile state" : f.amx_refusal;
  if (f.avx512_bf16) return "Intel without AMX: its AVX512-BF16 is no faster than float32";
  const char* isa = f.avx512 ? "AVX-512 without AVX512-BF16" : (f.avx2 ? "AVX2" : "no AVX2");
  return str("this CPU has no bf16 units (", isa, ")");
}

std::string cpu_bf16_matmuls() {
  const CpuGemmPath p = cpu_gemm_path();
  if (p != CpuGemmPath::Float32) return str("bf16 (", cpu_gemm_path_name(p), " path)");
  return "float32: " + (cpu_gemm_path_forced() ? kForcedFloat32 : float32_path_reason(cpu_features()));
}

bool cpu_gemm_path_available(CpuGemmPath p, std::string* why) {
  const CpuFeatures& f = cpu_features();
  std::string reason;
  if (p == CpuGemmPath::Amx && !f.amx_bf16)
    reason = capped_below(f, CpuIsa::Amx) ? cap_words(f) : "this CPU (or its OS) has no AMX-TILE/AMX-BF16 tile state";
  else if (p == CpuGemmPath::Amx && !f.amx_permitted)
    reason = f.amx_refusal;
  else if (p == CpuGemmPath::Avx512Bf16 && !f.avx512_bf16)
    reason = capped_below(f, CpuIsa::Avx512Bf16) ? cap_words(f) : "this CPU (or its OS) has no AVX512-BF16";
  if (why) *why = reason;
  return reason.empty();
}

namespace {
// KS_CPU_GEMM's path (checked), or nothing when it is unset or empty; read once.
const std::optional<CpuGemmPath>& env_path() {
  static const std::optional<CpuGemmPath> chosen = []() -> std::optional<CpuGemmPath> {
    const char* env = std::getenv("KS_CPU_GEMM");
    if (!env || !*env) return std::nullopt;
    const CpuGemmPath p = parse_path(env);
    std::string why;
    KS_CHECK(cpu_gemm_path_available(p, &why), "KS_CPU_GEMM=", env, ": ", why);
    return p;
  }();
  return chosen;
}
}  // namespace

CpuGemmPath cpu_gemm_path() {
  const int forced = g_forced.load();
  if (forced >= 0) return CpuGemmPath(forced);
  static const CpuGemmPath chosen = env_path().value_or(default_cpu_gemm_path(cpu_features()));
  return chosen;
}

bool cpu_gemm_path_forced() { return g_forced.load() >= 0 || env_path().has_value(); }

void set_cpu_gemm_path(CpuGemmPath p) {
  std::string why;
  KS_CHECK(cpu_gemm_path_available(p, &why), "set_cpu_gemm_path(", cpu_gemm_path_name(p), "): ", why);
  g_forced = int(p);
}

}  // namespace ks
