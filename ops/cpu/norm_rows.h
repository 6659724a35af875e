// ops/cpu/norm_rows.h — the parallel structure the CPU normalisation
// backwards share (cpu/layer_norm.cpp, cpu/rms_norm.cpp): rows walked in
// fixed blocks, each block adding its rows' dweight and dbias terms into its
// own double partials, and the partials added in block order.
//
// The rows are split into at most kBlocks blocks fixed by the row count
// alone, so dweight and dbias do not depend on the thread count, and no
// atomics are needed. Not here: any formula (the caller's per-row function).
#pragma once

#include <algorithm>
#include <vector>

#include "core/parallel.h"
#include "core/tensor.h"

namespace ks::cpu::norm_rows {

constexpr int64_t kGrain = 16384;  // elements per parallel chunk
constexpr int64_t kBlocks = 64;    // row blocks for dweight / dbias partials

template <class T> const T* ptr_or_null(const Tensor& t) { return t.defined() ? t.data<T>() : nullptr; }

// rows(r0, r1, pw, pb) for every block of rows [r0, r1), in parallel; pw and pb
// point at the block's N double partials of dweight and dbias (null where the
// gradient is not wanted), zeroed. Then dw and dbias (N, T, contiguous; each
// may be undefined) are the partials summed in block order.
template <class T, class Rows>
void blocked_rows(int64_t M, int64_t N, const Tensor& dw, const Tensor& db, Rows&& rows) {
  const int64_t per_block = (M + kBlocks - 1) / kBlocks, blocks = (M + per_block - 1) / per_block;
  std::vector<double> pw(dw.defined() ? size_t(blocks * N) : 0), pb(db.defined() ? size_t(blocks * N) : 0);
  parallel_for(0, blocks, std::max<int64_t>(1, kGrain / (per_block * N)), [&](int64_t b0, int64_t b1) {
    for (int64_t blk = b0; blk < b1; ++blk) {
      const int64_t r0 = blk * per_block, r1 = std::min(M, r0 + per_block);
      rows(r0, r1, pw.empty() ? nullptr : pw.data() + blk * N, pb.empty() ? nullptr : pb.data() + blk * N);
    }
  });
  auto reduce_blocks = [&](const std::vector<double>& part, const Tensor& out) {
    if (part.empty()) return;
    T* o = out.data<T>();
    parallel_for(0, N, std::max<int64_t>(256, kGrain / blocks), [&](int64_t j0, int64_t j1) {
      for (int64_t j = j0; j < j1; ++j) {
        double s = 0;
        for (int64_t blk = 0; blk < blocks; ++blk) s += part[size_t(blk * N + j)];
        o[j] = T(s);
      }
    });
  };
  reduce_blocks(pw, dw);
  reduce_blocks(pb, db);
}

}  // namespace ks::cpu::norm_rows
