// ops/cuda/attention_tiles.cuh — what the CUDA kernels of the fused attention
// ops (cuda/attention.cu, cuda/mixture_attention.cu) share: the tile
// geometry (a block of 4 warps, query tiles of 4·rw rows, key tiles of 32
// keys, one per lane), loading rows into shared memory, the visibility rule,
// the online-softmax update of one row, the dV sum, D = rowsum(dO∘O), and the
// host side that picks rows per warp for the device's shared memory and
// launches a tile kernel. The CUDA twin of ops/cpu/attention_tiles.h.
// Not here: the kernels themselves (each op's own file walks its tiles) and
// the per-score formulas (ops/attention_formulas.h,
// ops/mixture_attention_formulas.h). nvcc only.
#pragma once

#include <climits>
#include <cmath>
#include <string>

#include "core/copy.h"
#include "core/cuda/loops.cuh"
#include "ops/attention.h"
#include "ops/cuda/block_reduce.cuh"

namespace ks::cuda::attention_tiles {

constexpr int kWarps = 4;
constexpr int kBlock = kWarps * kWarp;  // threads per block
constexpr int kBC = kWarp;              // keys per tile: one per lane

// The sizes of one call. M is the number of key components (1 for softmax
// attention); tiles and rw are set per kernel by plan().
struct TileDims {
  int64_t H, T, S, M, P, E;
  int64_t tiles;      // query tiles (forward, dQ) or key tiles (dK/dV) per (b, h)
  int rw;             // query rows per warp
  int64_t group = 1;  // query heads per key/value head (grouped-query attention)
};

// Where a block of a tile kernel stands: its (b, h) pair (query-tile
// kernels) or (b, key/value head) pair (key-tile kernels), the first query
// row or key of its tile, how many the tile holds, and the pair's padding row
// (null without padding).
struct TileBlock {
  int64_t pair, first;
  int count;
  const bool* pad_b;
};

// Tiles of `size` over `extent` rows or keys, d.tiles of them per pair of
// `heads` heads per batch row.
__device__ inline TileBlock tile_block(const TileDims& d, const bool* pad, int64_t size, int64_t extent,
                                       int64_t heads) {
  const int64_t pair = blockIdx.x / d.tiles, first = (blockIdx.x % d.tiles) * size;
  return {pair, first, int(min(size, extent - first)), pad ? pad + (pair / heads) * d.S : nullptr};
}
__device__ inline TileBlock query_tile(const TileDims& d, const bool* pad) {
  return tile_block(d, pad, kWarps * d.rw, d.T, d.H);
}
__device__ inline TileBlock key_tile(const TileDims& d, const bool* pad) {
  return tile_block(d, pad, kBC, d.S, d.H / d.group);
}

// The rows of a query tile this thread's warp owns: rw consecutive rows,
// fewer in the last tile.  for (int r : warp_rows(d.rw, rows)) ...
struct WarpRows {
  int first, last;
  struct Iter {
    int r;
    __device__ int operator*() const { return r; }
    __device__ Iter& operator++() {
      ++r;
      return *this;
    }
    __device__ bool operator!=(const Iter& o) const { return r != o.r; }
  };
  __device__ Iter begin() const { return {first}; }
  __device__ Iter end() const { return {last}; }
};
__device__ inline WarpRows warp_rows(int rw, int rows) {
  const int first = int(threadIdx.x / kWarp) * rw;
  return {first, max(first, min(first + rw, rows))};
}

template <class T> __device__ inline T neg_inf() { return -INFINITY; }

// Whether query i sees key j (j < S assumed): causal, a sliding window, padding.
__device__ inline bool sees(const SdpaParams& prm, const bool* pad_b, int64_t i, int64_t j) {
  if (prm.causal && j > prm.causal_offset + i) return false;
  if (prm.causal && prm.window > 0 && j <= prm.causal_offset + i - prm.window) return false;
  return !(pad_b && pad_b[j]);
}

// Rows (n, w) to shared memory with row stride ld, by the whole block.
template <class T> __device__ inline void load_rows(T* dst, int64_t ld, const T* src, int64_t n, int64_t w) {
  for (int64_t x = threadIdx.x; x < n * w; x += kBlock) dst[(x / w) * ld + x % w] = src[x];
}

// dst[0, n) = v, by the whole block.
template <class T> __device__ inline void fill(T* dst, int64_t n, T v) {
  for (int64_t x = threadIdx.x; x < n; x += kBlock) dst[x] = v;
}

// dst[0, n) = src[0, n) (shared memory back to global), by the whole block.
template <class T> __device__ inline void store(T* dst, const T* src, int64_t n) {
  for (int64_t x = threadIdx.x; x < n; x += kBlock) dst[x] = src[x];
}

// The online softmax's start for `rows` rows: O = 0, m = -inf, l = 0.
template <class T> __device__ inline void start_rows(T* Os, T* ms, T* ls, int rows, int64_t E) {
  fill(Os, rows * E, T(0));
  fill(ms, rows, neg_inf<T>());
  fill(ls, rows, T(0));
}

template <class T> __device__ inline T dot(const T* a, const T* b, int64_t n) {
  T acc = 0;
  for (int64_t x = 0; x < n; ++x) acc += a[x] * b[x];
  return acc;
}

// The online-softmax step of row r, once each lane c < 32 has written its
// key's weight into Wr[c] (zero where hidden): O_r ← α·O_r + Σ_c W_rc V_c,
// then, after every lane has read the old max and the weights, m_r and
// l_r ← α·l_r + sum. Called by the warp that owns the row.
template <class T>
__device__ inline void online_update(T* Or, const T* Wr, const T* Vs, int cols, int64_t E, T alpha, T m_new, T sum,
                                     T* m, T* l) {
  __syncwarp();
  for (int64_t e = threadIdx.x % kWarp; e < E; e += kWarp) {
    T acc = 0;
    for (int c = 0; c < cols; ++c) acc += Wr[c] * Vs[c * E + e];
    Or[e] = Or[e] * alpha + acc;
  }
  __syncwarp();
  if (threadIdx.x % kWarp == 0) {
    *m = m_new;
    *l = *l * alpha + sum;
  }
  __syncwarp();
}

// dV_c += Σ_r W_rc dO_r over the query tile's rows, r in order (deterministic).
// W (rows, 32), dO (rows, e), dV (cols, e); by the whole block.
template <class T>
__device__ inline void accumulate_dv(T* dVs, const T* Ws, const T* Gs, int rows, int cols, int64_t E) {
  for (int64_t x = threadIdx.x; x < cols * E; x += kBlock) {
    const int64_t c = x / E, e = x % E;
    T acc = 0;
    for (int r = 0; r < rows; ++r) acc += Ws[r * kBC + c] * Gs[r * E + e];
    dVs[x] += acc;
  }
}

// D_i = dO_i · O_i, one thread per row: the backward's first kernel.
template <class T> __global__ void row_dot(T* D, const T* G, const T* O, int64_t rows, int64_t E) {
  for (int64_t i : grid_stride(rows)) D[i] = dot(G + i * E, O + i * E, E);
}

// --- host side ---
inline Tensor contiguous_or_undefined(const Tensor& t) { return t.defined() ? contiguous_raw(t) : Tensor(); }

// One kernel's launch: its grid and dynamic shared memory.
struct Launch {
  unsigned grid;
  size_t bytes;
};

// Sets d.rw to the most rows per warp (4, 2, 1) whose shared memory
// (shared(d, rw, element bytes)) fits the device, d.tiles to the query tiles
// (or key tiles, for a kernel that walks keys) per (b, h), and lets the
// kernel use that much shared memory. `sizes` names the head sizes in the
// error when not even rw = 1 fits.
template <class Kernel, class SharedFn>
Launch plan(Kernel kernel, SharedFn shared, TileDims& d, bool key_tiles, int64_t pairs, size_t elem, int device,
            const char* op, const std::string& sizes) {
  int optin = 0;
  KS_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  const size_t limit = size_t(optin);
  d.rw = 0;
  for (int rw : {4, 2, 1})
    if (shared(d, rw, elem) <= limit) {
      d.rw = rw;
      break;
    }
  KS_CHECK(d.rw > 0, op, ": ", sizes, " need ", shared(d, 1, elem),
           " bytes of shared memory per block, the device allows ", limit);
  d.tiles = key_tiles ? (d.S + kBC - 1) / kBC : (d.T + kWarps * d.rw - 1) / (kWarps * d.rw);
  KS_CHECK(pairs * d.tiles <= int64_t(INT_MAX), op, ": ", pairs * d.tiles, " blocks exceed the grid limit");
  const size_t bytes = shared(d, d.rw, elem);
  KS_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
  return {unsigned(pairs * d.tiles), bytes};
}

}  // namespace ks::cuda::attention_tiles
