// ops/cpu/linalg.cpp — the CPU GEMM kernels (gemm_kernel, gemm_bias_kernel of
// ops/linalg.h): batches of GEMMs through the GEMM door (ops/cpu/gemm/gemm.h),
// which follows the process's matmul precision for float32 and parallelises a
// single GEMM on oneTBB itself.
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
#include <type_traits>

#include "core/copy.h"
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
template <class T>
void gemm_typed(const Tensor& c, const Tensor& a, const Tensor& b, bool accumulate, const Tensor& bias = Tensor()) {
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

void gemm_cpu(const Tensor& c, const Tensor& a, const Tensor& b, bool accumulate) {
  dispatch_floating(c.dtype(), "gemm", [&](auto tag) {
    using T = typename decltype(tag)::type;
    gemm_typed<T>(c, a, b, accumulate);
  });
}

void gemm_bias_cpu(const Tensor& c, const Tensor& a, const Tensor& b, const Tensor& bias) {
  KS_ASSERT(bias.dim() == 1 && bias.is_contiguous() && bias.size(0) == c.size(-1));
  dispatch_floating(c.dtype(), "gemm", [&](auto tag) {
    using T = typename decltype(tag)::type;
    gemm_typed<T>(c, a, b, /*accumulate=*/false, bias);
  });
}

}  // namespace
KS_REGISTER_KERNEL(gemm_kernel, CPU, gemm_cpu);
KS_REGISTER_KERNEL(gemm_bias_kernel, CPU, gemm_bias_cpu);
}  // namespace ks::cpu
