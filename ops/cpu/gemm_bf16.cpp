// ops/cpu/gemm_bf16.cpp — the bf16 GEMM driver of ops/cpu/gemm_bf16.h:
// rounding and packing the operands, blocking, threads, the write-back, and
// the float32 path.
//
// Blocking. op(A) and op(B) are rounded and packed whole (gemm_bf16_pack.h),
// in parallel when threaded. Then for each k chunk of kKc and each column
// chunk of kNc (so a chunk of packed B, kKc × kNc bf16 = 512 KiB, stays in
// the core's L2 while the 32-row A blocks, 32 KiB, stay in L1), the
// (32, 32) output blocks of the chunk are the parallel tasks; consecutive
// tasks share their A block. With alpha = 1 and beta 0 or 1 (every GEMM of
// a training step) a whole block accumulates straight into C: the kernel
// loads C's block into its accumulators (beta = 1, or any k chunk after the
// first) and stores them back. Blocks on C's edge, and other alpha/beta, sum
// the chunk from zero into a local block, then C = alpha·block + beta·C for
// the first chunk, C += alpha·block after — float32 sums throughout.
// Scratch (the packed operands) is thread_local to the calling thread and
// grows to the largest GEMM seen, so steady-state training allocates nothing.
#include "ops/cpu/gemm_bf16.h"

#include <algorithm>
#include <vector>

#include "core/cpu_features.h"
#include "core/dtype.h"
#include "core/matmul_precision.h"
#include "core/parallel.h"
#include "ops/cpu/blas.h"
#include "ops/cpu/gemm_bf16_pack.h"

namespace ks::cpu {
namespace {

using bf16::kBlock;
using bf16::kPanel;
using bf16::round_up;

constexpr int64_t kKc = 512;  // k per chunk
constexpr int64_t kNc = 512;  // columns per chunk
// Multiply-adds per parallel task, so that small GEMMs stay on one thread.
constexpr int64_t kTaskWork = int64_t(1) << 21;

inline float rounded(float x) { return float(BFloat16(x)); }

// op(X) element (r, c) of a (rows, cols) operand stored with leading dimension ld.
struct Operand {
  const float* p;
  bool transposed;
  int64_t ld;
  float at(int64_t r, int64_t c) const { return transposed ? p[c * ld + r] : p[r * ld + c]; }
};

template <class F>
void maybe_parallel(bool threaded, int64_t count, int64_t grain, F&& body) {
  if (threaded)
    parallel_for(0, count, grain, body);
  else
    body(int64_t(0), count);
}

// The float32 path: rounded copies of the operands, then OpenBLAS.
void rounded_sgemm(const Operand& a, const Operand& b, int64_t m, int64_t n, int64_t k, float alpha, float beta,
                   float* c, int64_t ldc) {
  thread_local std::vector<float> ra, rb;
  ra.resize(size_t(m * k));
  rb.resize(size_t(k * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < k; ++j) ra[size_t(i * k + j)] = rounded(a.at(i, j));
  for (int64_t i = 0; i < k; ++i)
    for (int64_t j = 0; j < n; ++j) rb[size_t(i * n + j)] = rounded(b.at(i, j));
  blas_gemm(false, false, m, n, k, alpha, ra.data(), k, rb.data(), n, beta, c, ldc);
}

}  // namespace

void bf16_gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
               const float* b, int64_t ldb, float beta, float* c, int64_t ldc, bool threaded) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {  // an empty sum: C = beta·C (BLAS leaves 0·NaN to beta == 0 as 0)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == 0 ? 0.f : beta * c[i * ldc + j];
    return;
  }
  const Operand A{a, trans_a, lda}, B{b, trans_b, ldb};
  const CpuGemmPath path = cpu_gemm_path();
  if (path == CpuGemmPath::Float32) return rounded_sgemm(A, B, m, n, k, alpha, beta, c, ldc);

  const int64_t kp = round_up(k, bf16::kKStep), mp = round_up(m, kBlock), np = round_up(n, kBlock);
  thread_local std::vector<uint16_t> packed_a, packed_b;
  if (packed_a.size() < size_t(mp * kp)) packed_a.resize(size_t(mp * kp));
  if (packed_b.size() < size_t(np * kp)) packed_b.resize(size_t(np * kp));
  uint16_t* pa = packed_a.data();
  uint16_t* pb = packed_b.data();
  // A in groups of 16 rows, the unit of pack_a's transposing loop
  maybe_parallel(threaded, mp / kPanel, std::max<int64_t>(1, (1 << 16) / (kp * kPanel)), [&](int64_t g0, int64_t g1) {
    bf16::pack_a(a, trans_a, lda, m, k, kp, g0 * kPanel, g1 * kPanel, pa);
  });
  maybe_parallel(threaded, np / kPanel, std::max<int64_t>(1, (1 << 16) / (kp * kPanel)),
                 [&](int64_t p0, int64_t p1) { bf16::pack_b(b, trans_b, ldb, k, n, kp, p0, p1, pb); });

  const auto block = path == CpuGemmPath::Amx ? bf16::amx_block : bf16::avx512bf16_block;
  const int64_t m_blocks = mp / kBlock;
  const bool direct = alpha == 1 && (beta == 0 || beta == 1);
  for (int64_t k0 = 0; k0 < kp; k0 += kKc) {
    const int64_t kc = std::min(kKc, kp - k0);
    const bool first = k0 == 0;
    for (int64_t n0 = 0; n0 < np; n0 += kNc) {
      const int64_t n_blocks = std::min(kNc, np - n0) / kBlock;
      const int64_t grain = std::max<int64_t>(1, kTaskWork / (kBlock * kBlock * kc));
      maybe_parallel(threaded, m_blocks * n_blocks, grain, [&](int64_t t0, int64_t t1) {
        alignas(64) float out[kBlock * kBlock];
        for (int64_t t = t0; t < t1; ++t) {
          const int64_t i0 = (t / n_blocks) * kBlock, j0 = n0 + (t % n_blocks) * kBlock;
          const uint16_t* panel0 = pb + (j0 / kPanel) * kp * kPanel + k0 * kPanel;
          const int64_t rows = std::min(kBlock, m - i0), cols = std::min(kBlock, n - j0);
          if (direct && rows == kBlock && cols == kBlock) {  // C itself is the accumulator
            block(pa + i0 * kp + k0, kp, panel0, panel0 + kp * kPanel, kc, c + i0 * ldc + j0, ldc,
                  !first || beta == 1);
            continue;
          }
          block(pa + i0 * kp + k0, kp, panel0, panel0 + kp * kPanel, kc, out, kBlock, false);
          for (int64_t i = 0; i < rows; ++i) {
            float* dst = c + (i0 + i) * ldc + j0;
            const float* src = out + i * kBlock;
            if (!first || beta == 1)
              for (int64_t j = 0; j < cols; ++j) dst[j] += alpha * src[j];
            else if (beta == 0)
              for (int64_t j = 0; j < cols; ++j) dst[j] = alpha * src[j];
            else
              for (int64_t j = 0; j < cols; ++j) dst[j] = alpha * src[j] + beta * dst[j];
          }
        }
      });
    }
  }
}

void gemm_f32(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
              const float* b, int64_t ldb, float beta, float* c, int64_t ldc, bool threaded) {
  if (matmul_precision() == MatmulPrecision::BFloat16)
    bf16_gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, threaded);
  else
    blas_gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

}  // namespace ks::cpu
