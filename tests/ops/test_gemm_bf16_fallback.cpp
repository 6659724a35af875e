// tests/ops/test_gemm_bf16_fallback.cpp — MatmulPrecision::BFloat16 on a CPU
// without a bf16 kernel (core/matmul_precision.h), reproduced on any machine by
// forcing the float32 path (set_cpu_gemm_path, KS_CPU_GEMM=float32's switch):
// every float32 GEMM, linear's backward, and the softmax and MGK attention
// kernels, forward and backward, give float32 precision's results bit for bit;
// "auto" is BFloat16 by another name and so resolves to bf16 on a packed path
// and to float32 on the float32 path; and the words that report it
// (cpu_bf16_matmuls, float32_path_reason) name why.
// Not here: the bf16 kernels themselves (tests/ops/test_gemm_bf16.cpp), the
// training line and the run folder's record (tests/tools/).
#include <cmath>
#include <string>
#include <vector>

#include "core/cpu_features.h"
#include "core/matmul_precision.h"
#include "ops/cpu/gemm/gemm.h"
#include "ops/gemm_paths.h"
#include "support/testing.h"

using namespace ks;
using namespace ks::testing;

namespace {

// Forces the float32 path for a scope; the process's own path comes back after.
struct Float32PathScope {
  CpuGemmPath original = cpu_gemm_path();
  Float32PathScope() { set_cpu_gemm_path(CpuGemmPath::Float32); }
  ~Float32PathScope() { set_cpu_gemm_path(original); }
};

// The bits of every tensor, to compare two runs exactly.
std::vector<std::vector<float>> bits(const std::vector<Tensor>& ts) {
  std::vector<std::vector<float>> out;
  for (const Tensor& t : ts) out.push_back(contiguous(t).to_vector<float>());
  return out;
}

// Matmuls (ragged, transposed, batched, broadcast), linear with bias and its
// backward, softmax attention and MGK, forward and backward: every result.
std::vector<Tensor> workload(MatmulPrecision p) {
  MatmulPrecisionScope scope(p);
  Generator g(5);
  std::vector<Tensor> out;
  for (int64_t m : {1, 17, 100})
    for (int64_t k : {15, 33, 300}) out.push_back(matmul(randn({m, k}, {}, &g), randn({k, 70}, {}, &g)));
  out.push_back(matmul(transpose(randn({3, 40, 33}, {}, &g), -1, -2), transpose(randn({3, 17, 40}, {}, &g), -1, -2)));
  out.push_back(matmul(randn({2, 3, 20, 36}, {}, &g), randn({36, 50}, {}, &g)));
  // linear (rows 4100: every GEMM threaded), the shape linear's fused bf16 backward takes (out >= in)
  Tensor x = randn({4100, 64}, {}, &g), w = randn({96, 64}, {}, &g), b = randn({96}, {}, &g);
  for (Tensor* t : {&x, &w, &b}) t->set_requires_grad(true);
  Tensor y = linear(x, w, b);
  backward(sum(mul(y, randn({4100, 96}, {}, &g))));
  out.insert(out.end(), {y, x.grad(), w.grad(), b.grad()});
  // softmax attention and MGK's fused kernel, causal, forward and backward
  Tensor q = randn({2, 3, 70, 32}, {}, &g), kk = randn({2, 3, 90, 32}, {}, &g), v = randn({2, 3, 90, 16}, {}, &g);
  Tensor km = contiguous(stack({kk, mul(kk, 0.5)}, 2)), bias = zeros({1, 3, 2, 90});
  Tensor dout = randn({2, 3, 70, 16}, {}, &g);
  for (Tensor* t : {&q, &kk, &v, &km}) t->set_requires_grad(true);
  Tensor att = scaled_dot_product_attention(q, kk, v, {.causal = true});
  Tensor mix = mixture_attention(q, km, bias, v, {.causal = true}).out;
  backward(add(sum(mul(att, dout)), sum(mul(mix, dout))));
  out.insert(out.end(), {att, mix, q.grad(), kk.grad(), v.grad(), km.grad()});
  return out;
}

}  // namespace

TEST_CASE("bf16 without a bf16 kernel: float32's results bit for bit, fused kernels and backward included") {
  Float32PathScope float32_path;
  CHECK(cpu_matmul_precision(MatmulPrecision::BFloat16) == MatmulPrecision::Float32);
  const std::vector<std::vector<float>> f32 = bits(workload(MatmulPrecision::Float32));
  const std::vector<std::vector<float>> b16 = bits(workload(MatmulPrecision::BFloat16));
  REQUIRE(f32.size() == b16.size());
  for (size_t i = 0; i < f32.size(); ++i) {
    CAPTURE(i);
    CHECK(f32[i] == b16[i]);
  }
  // linear's fused bf16 backward steps aside, as it does for float32
  MatmulPrecisionScope bf16(MatmulPrecision::BFloat16);
  Tensor dx, dw, db;
  CHECK(
      !linear_backward_kernel(Device::cpu(), randn({40, 64}), randn({40, 8}), randn({64, 8}), true, true, dx, dw, db));
  // the GEMM door too, when a Gemm asks for bf16 itself: OpenBLAS's sgemm
  std::vector<float> a(7 * 40), b(40 * 9), c(7 * 9), want(7 * 9);
  for (size_t i = 0; i < a.size(); ++i) a[i] = 1.f + std::ldexp(float(i % 5), -9);  // not bf16-exact
  for (size_t i = 0; i < b.size(); ++i) b[i] = 1.f + std::ldexp(float(i % 3), -10);
  cpu::Gemm<float> gemm{.m = 7,
                        .n = 9,
                        .k = 40,
                        .a = {.data = a.data(), .ld = 40},
                        .b = {.data = b.data(), .ld = 9},
                        .c = want.data(),
                        .ldc = 9,
                        .precision = MatmulPrecision::Float32};
  cpu::gemm(gemm);
  gemm.c = c.data();
  gemm.precision = MatmulPrecision::BFloat16;
  cpu::gemm(gemm);
  CHECK(c == want);
}

TEST_CASE("bf16 with a bf16 kernel still rounds: the same workload gives other bits") {
  const int ran = for_each_gemm_path(kPackedPaths, [&](CpuGemmPath) {
    CHECK(cpu_matmul_precision(MatmulPrecision::BFloat16) == MatmulPrecision::BFloat16);
    CHECK(bits(workload(MatmulPrecision::Float32)) != bits(workload(MatmulPrecision::BFloat16)));
  });
  if (ran == 0) MESSAGE("no bf16 kernel on this CPU: only the float32 path above ran");
}

TEST_CASE("precision auto: BFloat16 by another name, so bf16 with a bf16 kernel and float32 without") {
  CHECK(parse_matmul_precision("auto", "--precision") == MatmulPrecision::BFloat16);
  CHECK(std::string(matmul_precision_name(MatmulPrecision::BFloat16)) == "bf16");  // the word stays bf16
  CHECK_THROWS_WITH_AS(parse_matmul_precision("fp8", "--precision"),
                       "--precision: expected float32, tf32, bf16, fp16 or auto, got 'fp8'", Error);
  const MatmulPrecision resolved = parse_matmul_precision("auto", "train.precision");
  {
    Float32PathScope float32_path;
    CHECK(cpu_matmul_precision(resolved) == MatmulPrecision::Float32);
  }
  for_each_gemm_path(kPackedPaths,
                     [&](CpuGemmPath) { CHECK(cpu_matmul_precision(resolved) == MatmulPrecision::BFloat16); });
  CHECK(cpu_matmul_precision(MatmulPrecision::Float32) == MatmulPrecision::Float32);
  CHECK(cpu_matmul_precision(MatmulPrecision::TF32) == MatmulPrecision::Float32);  // no TF32 unit on the CPU
}

TEST_CASE("bf16 without a bf16 kernel: the words say it computes in float32, and why") {
  {
    Float32PathScope float32_path;
    CHECK(cpu_gemm_path_forced());
    CHECK(cpu_bf16_matmuls() == "float32: KS_CPU_GEMM chose the float32 path");
  }
  if (cpu_gemm_path() != CpuGemmPath::Float32)
    CHECK(cpu_bf16_matmuls() == "bf16 (" + std::string(cpu_gemm_path_name(cpu_gemm_path())) + " path)");
  CpuFeatures zen3;  // AVX2 only: the machine of issue 32
  zen3.vendor = "AuthenticAMD";
  zen3.avx2 = true;
  CHECK(float32_path_reason(zen3) == "this CPU has no bf16 units (AVX2)");
  CpuFeatures skylake = zen3;
  skylake.vendor = "GenuineIntel";
  skylake.avx512 = true;
  CHECK(float32_path_reason(skylake) == "this CPU has no bf16 units (AVX-512 without AVX512-BF16)");
  CpuFeatures cooper_lake = skylake;
  cooper_lake.avx512_bf16 = true;
  CHECK(float32_path_reason(cooper_lake) == "Intel without AMX: its AVX512-BF16 is no faster than float32");
  CpuFeatures refused = cooper_lake;
  refused.amx_bf16 = true;
  refused.amx_refusal = "Linux refused the tile data permission (arch_prctl ARCH_REQ_XCOMP_PERM: Invalid argument)";
  CHECK(float32_path_reason(refused) == refused.amx_refusal);
  CpuFeatures zen4 = cooper_lake;  // AMD with AVX512-BF16, and a machine with AMX: a bf16 kernel, no reason
  zen4.vendor = "AuthenticAMD";
  CHECK(float32_path_reason(zen4).empty());
  refused.amx_permitted = true;
  CHECK(float32_path_reason(refused).empty());
  CHECK(float32_path_reason(CpuFeatures{}) == "this CPU has no bf16 units (no AVX2)");
}
