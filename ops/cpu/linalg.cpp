// ops/cpu/linalg.cpp — the CPU GEMM kernels (gemm_kernel, gemm_bias_kernel of
// ops/linalg.h): batches of GEMMs through the GEMM door (ops/cpu/gemm/gemm.h),
// which follows the process's matmul precision for float32 and parallelises a
// single GEMM on oneTBB itself.
//
// bfloat16 and float16 tensors multiply through float32 copies (gemm_16bit
// says why that is exact), the result rounded once.
//
// Operands. A matrix goes to the door where it lies when its last two strides are
// (ld, 1) (row-major) or (1, ld) (a transposed view, passed transposed).
// Anything else (every other column, a stride-0 matrix dim) is copied first,
// one copy per distinct matrix: broadcast batch dims keep stride 0
// (ops/gemm_layout.h). Batches are walked by pointer offsets, so broadcast
// operands are read in place.
//
// Threads, all oneTBB's (OpenBLAS itself runs single-threaded, ops/cpu/gemm/gemm.h):
//   - one GEMM, or a few big ones: each GEMM threaded;
//   - many GEMMs (attention heads): ks::parallel_for over the batch, one
//     single-threaded GEMM per task;
//   - any call from inside a parallel region: single-threaded.
#include <algorithm>
#include <climits>
#include <optional>
#include <type_traits>

#include "core/copy.h"
#include "core/matmul_precision.h"
#include "core/parallel.h"
#include "ops/cpu/gemm/gemm.h"
#include "ops/gemm_layout.h"
#include "ops/linalg.h"

namespace ks::cpu {
namespace {

// A GEMM below this many multiply-adds gains little from being cut into
// bands; batches of them run one GEMM per task instead.
constexpr double kSmallGemm = double(1 << 24);
// Multiply-adds per parallel task (~20-40 us on one core), so that a batch of
// tiny GEMMs stays on one thread.
constexpr double kTaskWork = double(1 << 20);

// `bias` (N,), contiguous, or undefined: see GemmBiasKernel (ops/linalg.h).
// `precision` unset: the process's matmul precision (float32 only).
template <class T>
void gemm_typed(const Tensor& c, const Tensor& a, const Tensor& b, bool accumulate, const Tensor& bias = Tensor(),
                std::optional<MatmulPrecision> precision = std::nullopt) {
  if (c.numel() == 0) return;
  KS_ASSERT(c.is_contiguous() && a.dim() == c.dim() && b.dim() == c.dim());
  const int64_t M = c.size(-2), N = c.size(-1), K = a.size(-1);
  if (K == 0) {  // an empty sum
    if (bias.defined())
      copy_(c, bias);  // broadcast over the rows
    else if (!accumulate)
      fill_(c, 0.0);
    return;
  }
  const Tensor A = gemm_ready(a), B = gemm_ready(b);
  const GemmLayout la = *gemm_layout(M, K, A.stride(-2), A.stride(-1));
  const GemmLayout lb = *gemm_layout(K, N, B.stride(-2), B.stride(-1));
  KS_CHECK(std::max({M, N, K, la.ld, lb.ld}) <= INT_MAX, "gemm: matrices ", A.sizes(), " and ", B.sizes(),
           " exceed BLAS's 32-bit sizes");

  const Shape batch(c.sizes().begin(), c.sizes().end() - 2);
  const Shape& sa = A.strides();
  const Shape& sb = B.strides();
  const T* pa = A.data<T>();
  const T* pb = B.data<T>();
  T* pc = c.data<T>();
  auto run = [&](int64_t i, bool threaded) {  // GEMM number i of the batch (row-major order)
    int64_t oa = 0, ob = 0, rest = i;
    for (int64_t d = int64_t(batch.size()) - 1; d >= 0; --d) {
      const int64_t idx = rest % batch[size_t(d)];
      rest /= batch[size_t(d)];
      oa += idx * sa[size_t(d)];
      ob += idx * sb[size_t(d)];
    }
    gemm<T>({.m = M,
             .n = N,
             .k = K,
             .a = {.data = pa + oa, .ld = la.ld, .transposed = la.transposed},
             .b = {.data = pb + ob, .ld = lb.ld, .transposed = lb.transposed},
             .beta = accumulate ? T(1) : T(0),
             .c = pc + i * M * N,
             .ldc = N,
             .row_bias = bias.defined() ? bias.data<T>() : nullptr,
             .precision = precision,
             .threaded = threaded});
  };

  const int threads = num_threads();
  const int64_t count = numel_of(batch);
  if (count == 1) {
    run(0, !in_parallel_region() && threads > 1);
    return;
  }
  // One GEMM per task wins unless a few big GEMMs would leave a thread idle
  // in the last round (3 GEMMs on 2 threads): those are each threaded.
  const double mnk = double(M) * double(N) * double(K);
  const int64_t rounds = (count + threads - 1) / threads;
  const bool balanced = count * 10 >= rounds * threads * 9;
  if (in_parallel_region() || (threads > 1 && (balanced || mnk < kSmallGemm))) {
    const int64_t grain = std::max<int64_t>(1, int64_t(kTaskWork / mnk));
    parallel_for(0, count, grain, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) run(i, false);
    });
  } else {
    for (int64_t i = 0; i < count; ++i) run(i, true);
  }
}

// bfloat16 and float16 operands. The product of two 16-bit values is exact in
// float32, so the operands widen (exactly) to float32 copies, the float32
// GEMM sums the products, and the result rounds once into c. bfloat16 runs at
// MatmulPrecision::BFloat16, whose rounding leaves bf16 values unchanged, so
// the bf16 kernels (AMX, AVX512-BF16) multiply them where the CPU has one and
// sgemm where it has none, the same products either way; float16 runs at
// Float32, as bf16 rounding would drop three of its mantissa bits.
// The widened copies cost a pass over each operand: a kernel that packs the
// 16-bit values directly is the faster form, not written yet.
//
// A bf16 B that is one matrix (a weight: no batch dims, or broadcast ones)
// is not widened: op(A)'s rows become one GEMM's rows and the door takes B's
// bf16 values in place (Gemm::b_bf16), which its few-row kernel reads at
// half the bytes; a model decoding with bf16 weights streams 2 bytes a
// weight instead of widening 2 into 4 and reading the 4 (bf16_weight_gemm).
bool bf16_weight_gemm(const Tensor& c32, const Tensor& a32, const Tensor& b, bool accumulate, const Tensor& bias32) {
  if (b.dtype() != kBFloat16) return false;
  for (int64_t d = 0; d + 2 < b.dim(); ++d)
    if (b.size(d) != 1 && b.stride(d) != 0) return false;
  const int64_t N = c32.size(-1), K = a32.size(-1), M = N ? c32.numel() / N : 0;
  // op(A)'s rows must be C's rows one for one (no batch of A broadcast against C).
  if (M == 0 || K == 0 || a32.numel() != M * K) return false;
  const std::optional<GemmLayout> lb = gemm_layout(K, N, b.stride(-2), b.stride(-1));
  if (!lb || std::max({M, N, K, lb->ld}) > INT_MAX) return false;
  const auto* bits = reinterpret_cast<const uint16_t*>(b.data<BFloat16>());
  gemm<float>({.m = M,
               .n = N,
               .k = K,
               .a = {.data = a32.data<float>(), .ld = K},
               .b = {.ld = lb->ld, .transposed = lb->transposed},
               .beta = accumulate ? 1.f : 0.f,
               .c = c32.data<float>(),
               .ldc = N,
               .row_bias = bias32.defined() ? bias32.data<float>() : nullptr,
               .b_bf16 = bits,
               .precision = MatmulPrecision::BFloat16,
               .threaded = !in_parallel_region() && num_threads() > 1});
  return true;
}

void gemm_16bit(const Tensor& c, const Tensor& a, const Tensor& b, bool accumulate, const Tensor& bias) {
  const Device cpu = Device::cpu();
  const Tensor c32 = accumulate ? to_raw(c, cpu, kFloat32) : Tensor::empty(c.sizes(), kFloat32, cpu);
  const MatmulPrecision precision = c.dtype() == kBFloat16 ? MatmulPrecision::BFloat16 : MatmulPrecision::Float32;
  const Tensor a32 = to_raw(a, cpu, kFloat32), bias32 = bias.defined() ? to_raw(bias, cpu, kFloat32) : Tensor();
  if (!(c.dtype() == kBFloat16 && bf16_weight_gemm(c32, a32, b, accumulate, bias32)))
    gemm_typed<float>(c32, a32, to_raw(b, cpu, kFloat32), accumulate, bias32, precision);
  copy_(c, c32);
}

void gemm_cpu(const Tensor& c, const Tensor& a, const Tensor& b, bool accumulate) {
  dispatch_floating16(c.dtype(), "gemm", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (is_16bit_v<T>)
      gemm_16bit(c, a, b, accumulate, Tensor());
    else
      gemm_typed<T>(c, a, b, accumulate);
  });
}

void gemm_bias_cpu(const Tensor& c, const Tensor& a, const Tensor& b, const Tensor& bias) {
  KS_ASSERT(bias.dim() == 1 && bias.is_contiguous() && bias.size(0) == c.size(-1));
  dispatch_floating16(c.dtype(), "gemm", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (is_16bit_v<T>)
      gemm_16bit(c, a, b, /*accumulate=*/false, bias);
    else
      gemm_typed<T>(c, a, b, /*accumulate=*/false, bias);
  });
}

}  // namespace
KS_REGISTER_KERNEL(gemm_kernel, CPU, gemm_cpu);
KS_REGISTER_KERNEL(gemm_bias_kernel, CPU, gemm_bias_cpu);
}  // namespace ks::cpu
