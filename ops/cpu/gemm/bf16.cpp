// ops/cpu/gemm/bf16.cpp — the bf16 GEMM driver behind the door (gemm.h,
// packed.h's bf16::gemm, on the AMX and AVX512-BF16 paths): rounding and
// packing the operands, blocking, threads, the write-back; and gemm.h's
// packed_product, the fused attention's products over its own packed operands.
//
// Blocking. op(A) and op(B) are rounded and packed whole (packed.h),
// in parallel when threaded. C is cut into macro tiles of kMc × kNc (fewer
// rows or columns when there would be too few tiles for the threads); a
// tile is one parallel task. Within a tile, for each k chunk of kKc, the
// (32, 32) blocks run with columns fastest, so consecutive blocks share
// their A block (16 KiB, in L1) and each block kernel call prefetches the
// next one's B (and A, when it changes) into L1. The tile's sums live in a
// float32 scratch tile (512 KiB, in L2, with a row stride 16 floats off a
// power of two so that tile rows do not collide in L1 sets) across the k
// chunks; after a block's last chunk C = alpha·scratch + beta·C, the only
// pass over C. With one k chunk, alpha = 1 and beta 0 or 1, whole blocks
// are summed straight into C instead. A weight gradient (op(A) = Xᵀ, op(B) = Y)
// runs as Cᵀ = Yᵀ·X when that puts the transposing pack on the smaller
// operand, C then written transposed.
// Float32 sums throughout.
// Scratch (the packed operands, the scratch tiles) is thread_local to the calling thread and
// grows to the largest GEMM seen, so steady-state training allocates nothing.
// Not here: the checks, empty sums and precision choice (the door, gemm.cpp),
// packing (pack.cpp), the block kernels (amx.cpp, avx512bf16.cpp).
#include <algorithm>
#include <vector>

#include "core/cpu_features.h"
#include "core/error.h"
#include "core/parallel.h"
#include "ops/cpu/gemm/gemm.h"
#include "ops/cpu/gemm/packed.h"

namespace ks::cpu::bf16 {
namespace {

constexpr int64_t kKc = 256;  // k per chunk: a block's A and B (16 KiB each) fit L1
constexpr int64_t kMc = 256;  // rows per macro tile
constexpr int64_t kNc = 512;  // columns per macro tile

// op(A) (m, k) and op(B) (k, n) of g rounded and packed whole into this
// thread's buffers, in parallel when g.threaded: the product over them, C
// written as g says.
PackedGemm packed_operands(const Gemm<float>& g) {
  const int64_t m = g.m, n = g.n, k = g.k;
  const int64_t kp = round_up(k, kKStep), mp = round_up(m, kBlock), np = round_up(n, kBlock);
  const int64_t ka = packed_a_ld(k);  // kp and a cache line: tile rows spread over L1 sets
  thread_local std::vector<uint16_t> packed_a, packed_b;
  if (packed_a.size() < size_t(mp * ka)) packed_a.resize(size_t(mp * ka));
  if (packed_b.size() < size_t(np * kp)) packed_b.resize(size_t(np * kp));
  uint16_t* pa = packed_a.data();
  uint16_t* pb = packed_b.data();
  // A in groups of 16 rows, the unit of pack_a's transposing loop
  maybe_parallel(g.threaded, mp / kPanel, std::max<int64_t>(1, (1 << 16) / (ka * kPanel)),
                 [&](int64_t g0, int64_t g1) { pack_a_rows(g.a, m, k, ka, g0 * kPanel, g1 * kPanel, pa); });
  maybe_parallel(g.threaded, np / kPanel, std::max<int64_t>(1, (1 << 16) / (kp * kPanel)),
                 [&](int64_t p0, int64_t p1) { pack_b_panels(g.b, k, n, kp, p0, p1, pb); });
  return {.a = {.data = pa, .ld = ka},
          .b = {.data = pb, .kp = kp},
          .m = m,
          .n = n,
          .alpha = g.alpha,
          .beta = g.beta,
          .c = g.c,
          .ldc = g.ldc,
          .row_bias = g.row_bias,
          .threaded = g.threaded};
}

}  // namespace

void gemm(const Gemm<float>& g) {
  const CpuGemmPath path = cpu_gemm_path();
  KS_ASSERT(path != CpuGemmPath::Float32);  // the door runs OpenBLAS there (cpu_matmul_precision)
  // A weight gradient (op(A) = Xᵀ, op(B) = Y, both strided along k) needs one
  // transposing pack, the slow kind: give it the smaller operand by computing
  // Cᵀ = Yᵀ·X and writing C transposed. (Weight gradients have no bias.)
  if (g.a.transposed && !g.b.transposed && g.m > g.n && !g.row_bias) {
    Gemm<float> t = g;
    t.m = g.n;
    t.n = g.m;
    t.a = {.data = g.b.data, .ld = g.b.ld, .transposed = true};
    t.b = {.data = g.a.data, .ld = g.a.ld, .transposed = false};
    PackedGemm p = packed_operands(t);
    p.c_transposed = true;
    return tiled_product(path, p);
  }
  tiled_product(path, packed_operands(g));
}

void tiled_product(CpuGemmPath path, const PackedGemm& p) {
  const uint16_t *pa = p.a.data, *pb = p.b.data;
  const int64_t ka = p.a.ld, kp = p.b.kp, m = p.m, n = p.n, ldc = p.ldc;
  const float alpha = p.alpha, beta = p.beta;
  float* const c = p.c;
  const float* const row_bias = p.row_bias;
  const bool threaded = p.threaded, c_transposed = p.c_transposed;
  const int64_t mp = round_up(m, kBlock), np = round_up(n, kBlock);
  const auto block = path == CpuGemmPath::Amx ? amx_block : avx512bf16_block;
  // Macro tiles: smaller where there would be too few to keep every thread busy.
  const int64_t threads = threaded ? num_threads() : 1;
  int64_t mc = kMc, nc = kNc;
  auto tiles = [&] { return ((mp + mc - 1) / mc) * ((np + nc - 1) / nc); };
  while (tiles() < 2 * threads && mc > kBlock) mc /= 2;
  while (tiles() < 2 * threads && nc > kBlock) nc /= 2;
  const int64_t m_tiles = (mp + mc - 1) / mc, n_tiles = (np + nc - 1) / nc;

  maybe_parallel(threaded, m_tiles * n_tiles, 1, [&](int64_t t0, int64_t t1) {
    thread_local std::vector<float> scratch;
    const int64_t lds = nc + kBlock / 2;  // 16 floats off a power of two
    if (scratch.size() < size_t(mc * lds)) scratch.resize(size_t(mc * lds));
    float* acc = scratch.data();
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t i_base = (t / n_tiles) * mc, j_base = (t % n_tiles) * nc;
      const int64_t m_blocks = std::min(mc, mp - i_base) / kBlock, n_blocks = std::min(nc, np - j_base) / kBlock;
      const int64_t per_chunk = m_blocks * n_blocks, chunks = (kp + kKc - 1) / kKc;
      // Block number q of this tile: k chunk q / per_chunk, then rows, then columns (fastest).
      auto a_of = [&](int64_t q) {
        return pa + (i_base + (q % per_chunk) / n_blocks * kBlock) * ka + (q / per_chunk) * kKc;
      };
      auto b_of = [&](int64_t q) {
        return pb + (j_base + (q % n_blocks) * kBlock) / kPanel * kp * kPanel + (q / per_chunk) * kKc * kPanel;
      };
      // C = alpha·sums + beta·C for block (ib, jb)'s real rows and columns (beta = 0 never reads C).
      auto write_back = [&](int64_t ib, int64_t jb) {
        const int64_t i0 = ib * kBlock, j0 = jb * kBlock;
        const int64_t rows = std::min(kBlock, m - i_base - i0), cols = std::min(kBlock, n - j_base - j0);
        if (c_transposed) {
          store_transposed(acc + i0 * lds + j0, lds, rows, cols, alpha, beta, c + (j_base + j0) * ldc + i_base + i0,
                           ldc);
          return;
        }
        for (int64_t i = 0; i < rows; ++i) {
          const float* src = acc + (i0 + i) * lds + j0;
          float* dst = c + (i_base + i0 + i) * ldc + j_base + j0;
          if (beta == 0 && alpha == 1)
            std::copy(src, src + cols, dst);
          else if (beta == 0)
            for (int64_t j = 0; j < cols; ++j) dst[j] = alpha * src[j];
          else
            for (int64_t j = 0; j < cols; ++j) dst[j] = alpha * src[j] + beta * dst[j];
        }
      };
      // One k chunk, alpha = 1 and beta 0 or 1 (a product, or one added to a
      // bias already in C): whole blocks go straight to C, no pass over scratch.
      const bool direct = chunks == 1 && alpha == 1 && (beta == 0 || beta == 1) && !c_transposed;
      for (int64_t q = 0; q < chunks * per_chunk; ++q) {
        const int64_t k0 = (q / per_chunk) * kKc, kc = std::min(kKc, kp - k0);
        const int64_t ib = (q % per_chunk) / n_blocks, jb = q % n_blocks;
        NextBlock next;
        if (q + 1 < chunks * per_chunk) {
          if ((q + 1) % per_chunk / n_blocks != ib || q + 1 == (q / per_chunk + 1) * per_chunk) next.a = a_of(q + 1);
          next.b0 = b_of(q + 1);
          next.b1 = next.b0 + kp * kPanel;
          if (q + 1 >= per_chunk) {  // after the first chunk every block starts from its sums
            const int64_t nq = (q + 1) % per_chunk;
            next.c = acc + (nq / n_blocks) * kBlock * lds + (nq % n_blocks) * kBlock;
            next.ldc = lds;
          }
        }
        const uint16_t* b0 = b_of(q);
        const int64_t row = i_base + ib * kBlock, col = j_base + jb * kBlock;
        if (direct && row + kBlock <= m && col + kBlock <= n) {
          float* cb = c + row * ldc + col;
          if (row_bias)
            block(a_of(q), ka, b0, b0 + kp * kPanel, kc, cb, ldc, row_bias + col, 0, next);
          else
            block(a_of(q), ka, b0, b0 + kp * kPanel, kc, cb, ldc, beta == 1 ? cb : nullptr, ldc, next);
          continue;
        }
        // Through the scratch tile: the first chunk starts from 0 or the bias
        // (one row repeated, stride 0; its columns past n are in the padding
        // the write-back leaves out), later chunks from the sums.
        float* ab = acc + ib * kBlock * lds + jb * kBlock;
        if (k0 > 0)
          block(a_of(q), ka, b0, b0 + kp * kPanel, kc, ab, lds, ab, lds, next);
        else if (row_bias && col + kBlock <= n)
          block(a_of(q), ka, b0, b0 + kp * kPanel, kc, ab, lds, row_bias + col, 0, next);
        else if (row_bias) {  // the bias's last, partial block: a padded copy
          alignas(64) float edge[kBlock] = {};
          std::copy(row_bias + col, row_bias + n, edge);
          block(a_of(q), ka, b0, b0 + kp * kPanel, kc, ab, lds, edge, 0, next);
        } else
          block(a_of(q), ka, b0, b0 + kp * kPanel, kc, ab, lds, nullptr, 0, next);
        if (q >= (chunks - 1) * per_chunk) write_back(ib, jb);  // the block's last chunk
      }
    }
  });
}

void packed_product(const PackedProduct& p) {
  const auto block = p.path == CpuGemmPath::Amx ? amx_block : avx512bf16_block;
  const uint16_t *const a = p.a.data, *const b = p.b.data;
  const int64_t lda_p = p.a.ld, panel_stride = p.b.kp * kPanel, m = p.m, n = p.n, kc = p.k, ldc = p.ldc;
  float* const c = p.c;
  const bool accumulate = p.accumulate;
  const int64_t m_blocks = round_up(m, kBlock) / kBlock, n_blocks = round_up(n, kBlock) / kBlock;
  auto a_of = [&](int64_t ib) { return a + ib * kBlock * lda_p; };
  auto b_of = [&](int64_t jb) { return b + 2 * jb * panel_stride; };
  for (int64_t ib = 0; ib < m_blocks; ++ib)
    for (int64_t jb = 0; jb < n_blocks; ++jb) {
      NextBlock next;  // columns fastest: the next block shares A unless the row changes
      const bool last_col = jb + 1 == n_blocks;
      if (!last_col || ib + 1 < m_blocks) {
        next.b0 = b_of(last_col ? 0 : jb + 1);
        next.b1 = next.b0 + panel_stride;
        if (last_col) next.a = a_of(ib + 1);
      }
      const int64_t i0 = ib * kBlock, j0 = jb * kBlock;
      const uint16_t* b0 = b_of(jb);
      if (i0 + kBlock <= m && j0 + kBlock <= n) {
        float* const cb = c + i0 * ldc + j0;
        block(a_of(ib), lda_p, b0, b0 + panel_stride, kc, cb, ldc, accumulate ? cb : nullptr, ldc, next);
        continue;
      }
      // an edge block: through a local tile, only its real part touching C
      const int64_t rows = std::min(kBlock, m - i0), cols = std::min(kBlock, n - j0);
      alignas(64) float tile[kBlock * kBlock];
      if (accumulate) {
        std::fill(tile, tile + kBlock * kBlock, 0.f);
        for (int64_t i = 0; i < rows; ++i)
          std::copy(c + (i0 + i) * ldc + j0, c + (i0 + i) * ldc + j0 + cols, tile + i * kBlock);
      }
      block(a_of(ib), lda_p, b0, b0 + panel_stride, kc, tile, kBlock, accumulate ? tile : nullptr, kBlock, next);
      for (int64_t i = 0; i < rows; ++i)
        std::copy(tile + i * kBlock, tile + i * kBlock + cols, c + (i0 + i) * ldc + j0);
    }
}

}  // namespace ks::cpu::bf16
