// ops/cpu/gemm/amx.cpp — the AMX block kernel of ops/cpu/gemm/packed.h:
// a (32, 32) float32 block as a 2 × 2 grid of 16 × 16 accumulator tiles.
//
// Tiles: tmm0-3 accumulate C (16 rows × 16 float32), tmm4-5 hold two 16-row
// A tiles (16 rows × 32 bf16), tmm6-7 two B tiles (16 pair-rows × 16 pairs of
// one panel). Each k step of 32 loads four tiles and issues four
// _tile_dpbf16ps, each 16·16·32 multiply-adds. Every thread that runs the
// kernel loads the tile configuration once (thread_local); the permission to
// use tile state was requested for the process by core/cpu_features.cpp
// before any path could choose this kernel.
// Compiled for AMX by function attribute only, so nothing else in the
// library can pick up AMX instructions.
// Not here: packing (pack.cpp), blocking, the float32 write-back (bf16.cpp).
#include <immintrin.h>

#include <cstring>

#include "ops/cpu/gemm/packed.h"

namespace ks::cpu::bf16 {
namespace {

struct alignas(64) TileConfig {
  uint8_t palette_id;
  uint8_t start_row;
  uint8_t reserved[14];
  uint16_t colsb[16];  // bytes per row of tile i
  uint8_t rows[16];
};

__attribute__((target("amx-tile"))) void configure_tiles() {
  thread_local bool configured = false;
  if (configured) return;
  TileConfig cfg;
  std::memset(&cfg, 0, sizeof cfg);
  cfg.palette_id = 1;
  for (int t = 0; t < 8; ++t) {  // every tile: 16 rows of 64 bytes
    cfg.rows[t] = 16;
    cfg.colsb[t] = 64;
  }
  _tile_loadconfig(&cfg);
  configured = true;
}

}  // namespace

__attribute__((target("amx-tile,amx-bf16"))) void amx_block(const uint16_t* a, int64_t lda_p, const uint16_t* b0,
                                                            const uint16_t* b1, int64_t kc, float* c, int64_t ldc,
                                                            const float* c_in, int64_t ldc_in, const NextBlock& next) {
  configure_tiles();
  const int64_t a_stride = lda_p * int64_t(sizeof(uint16_t));
  const uint16_t* a1 = a + kPanel * lda_p;  // rows 16..31 of the block
  const int64_t c_stride = ldc * int64_t(sizeof(float));
  float* c1 = c + kPanel * ldc;
  if (c_in) {  // a stride of 0 loads the same row into all 16 tile rows (a bias)
    const int64_t in_stride = ldc_in * int64_t(sizeof(float));
    const float* in1 = c_in + kPanel * ldc_in;
    _tile_loadd(0, c_in, in_stride);
    _tile_loadd(1, c_in + kPanel, in_stride);
    _tile_loadd(2, in1, in_stride);
    _tile_loadd(3, in1 + kPanel, in_stride);
  } else {
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
  }
  // Tiles are not renamed, so a tile load waits for the products still
  // reading its register, and a load that misses L1 stalls them all. Each k
  // step therefore prefetches, kAhead steps ahead, the A rows and B rows it
  // will load — running on into the next block's operands (`next`) at the
  // end — so that tile loads hit L1. Loads are interleaved with the
  // products that free their registers.
  constexpr int64_t kAhead = 4;
  const int64_t steps = kc / kKStep;
  for (int64_t s = 0; s < steps; ++s) {
    const int64_t k = s * kKStep;
    const bool wraps = s + kAhead >= steps;
    const int64_t kf = (wraps ? s + kAhead - steps : s + kAhead) * kKStep;
    const bool in_range = kf < kc;                                // a block shorter than kAhead steps prefetches less
    const uint16_t* fa = !in_range || !wraps ? nullptr : next.a;  // a block's own A rows stay in L1
    const uint16_t* fb0 = !in_range ? nullptr : wraps ? next.b0 : b0;
    const uint16_t* fb1 = !in_range ? nullptr : wraps ? next.b1 : b1;
    if (fb0)
      for (int line = 0; line < 16; ++line) {
        _mm_prefetch((const char*)(fb0 + kf * kPanel) + 64 * line, _MM_HINT_T0);
        _mm_prefetch((const char*)(fb1 + kf * kPanel) + 64 * line, _MM_HINT_T0);
      }
    if (fa)
      for (int row = 0; row < 32; ++row) _mm_prefetch((const char*)(fa + row * lda_p + kf), _MM_HINT_T0);
    if (next.c)  // the next block's 32 rows of accumulators (128 bytes each), spread over the steps
      for (int64_t row = s; row < kBlock; row += steps) {
        _mm_prefetch((const char*)(next.c + row * next.ldc), _MM_HINT_T0);
        _mm_prefetch((const char*)(next.c + row * next.ldc + kPanel), _MM_HINT_T0);
      }
    _tile_loadd(4, a + k, a_stride);
    _tile_loadd(6, b0 + k * kPanel, 64);  // rows k/2 .. k/2+15 of the panel
    _tile_loadd(7, b1 + k * kPanel, 64);
    _tile_dpbf16ps(0, 4, 6);
    _tile_loadd(5, a1 + k, a_stride);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  _tile_stored(0, c, c_stride);
  _tile_stored(1, c + kPanel, c_stride);
  _tile_stored(2, c1, c_stride);
  _tile_stored(3, c1 + kPanel, c_stride);
}

}  // namespace ks::cpu::bf16
