// ops/cpu/reduce_loops.h — the one loop skeleton under every CPU reduction.
//
// The input is seen as M outputs × N reduced elements. Two layouts run
// without a copy:
//   rows:    the reduced elements of each output are one contiguous run
//            (x (B, T, C) summed over C); kept dims may have any strides.
//   columns: some kept dim is contiguous (x (N, C) summed over N, or x (B, T, C)
//            over T): each step folds one contiguous slab of outputs.
// Any other layout is first copied into (kept, reduced) order, i.e. rows.
//
// An op supplies a Reducer R with the per-element logic only:
//   using Acc = ...;                          // the running state of one output
//   Acc init(int64_t m) const;                // m: row-major index of the output
//   void step(Acc&, T x, int64_t j) const;    // j: row-major index within the reduced dims
//   void merge(Acc& a, const Acc& b) const;   // b covers indices after a's
//   void finish(int64_t m, const Acc&, int64_t n) const;  // writes output m
//   (optional) void run(Acc&, const T* p, int64_t n, int64_t j0) const;  // contiguous fast path
//
// Determinism: long reductions are cut into chunks whose partial states are
// merged in index order. Chunk boundaries depend on the shape alone, never
// on the thread count, so results are bitwise identical on 1 or 64 threads.
// This file is not the elementwise loop (loops.h) and holds no op logic.
#pragma once

#include <algorithm>
#include <vector>

#include "core/copy.h"
#include "core/parallel.h"
#include "core/strided_loop.h"
#include "core/tensor.h"

namespace ks::cpu {

// A run longer than this is cut into chunks (one task each); ~10-30 µs of work.
constexpr int64_t kReduceChunk = 1 << 15;
// Columns per column task: the accumulators stay in L1.
constexpr int64_t kColumnBlock = 1024;
// Column layouts with few outputs split the slabs until there are about this many
// tasks (a shape-only rule: more than any thread count needs), each of at least
// kMinSlabs slabs.
constexpr int64_t kColumnTasks = 64;
constexpr int64_t kMinSlabs = 16;

// Walks the element offsets of a (sizes, strides) index space in row-major order.
struct Odometer {
  const Shape& sizes;
  const Shape& strides;
  Shape idx;
  int64_t off = 0;
  Odometer(const Shape& s, const Shape& st, int64_t start) : sizes(s), strides(st), idx(s.size(), 0) {
    for (int64_t d = int64_t(s.size()) - 1; d >= 0; --d) {
      idx[size_t(d)] = start % s[size_t(d)];
      off += idx[size_t(d)] * st[size_t(d)];
      start /= s[size_t(d)];
    }
  }
  void next() {
    for (int64_t d = int64_t(sizes.size()) - 1; d >= 0; --d) {
      off += strides[size_t(d)];
      if (++idx[size_t(d)] < sizes[size_t(d)]) return;
      off -= strides[size_t(d)] * sizes[size_t(d)];
      idx[size_t(d)] = 0;
    }
  }
};

// How x's elements map onto M outputs × N reduced elements.
struct ReduceGeometry {
  Tensor x;  // the input, or its copy in (kept, reduced) order
  int64_t M = 1, N = 1;
  bool rows = true;
  // rows: the kept dims (coalesced, row-major order) with x's strides.
  Shape kept_sizes, kept_strides;
  // columns: the contiguous kept dim, and the other kept dims with x's and out's strides.
  int64_t inner = 1, inner_out_stride = 1;
  Shape outer_sizes, outer_strides, outer_out_strides;
  // the reduced dims (coalesced, row-major order) with x's strides.
  Shape red_sizes, red_strides;
};

// Merges neighbouring dims whose strides nest and drops size-1 dims, as every
// strided loop does (core/strided_loop.h); at least one dim remains.
inline void coalesce_dims(Shape& sizes, Shape& strides) {
  StridedLayout<1> L = make_strided_layout<1>(sizes, {strides}, {1});
  sizes = std::move(L.sizes);
  strides = std::move(L.strides[0]);
}

inline ReduceGeometry reduce_geometry(const Tensor& x, const std::vector<bool>& mask) {
  ReduceGeometry g;
  g.x = x;
  for (int64_t d = 0; d < x.dim(); ++d) {
    Shape& sz = mask[size_t(d)] ? g.red_sizes : g.kept_sizes;
    Shape& st = mask[size_t(d)] ? g.red_strides : g.kept_strides;
    sz.push_back(x.size(d));
    st.push_back(x.stride(d));
  }
  g.M = numel_of(g.kept_sizes);
  g.N = numel_of(g.red_sizes);
  coalesce_dims(g.kept_sizes, g.kept_strides);
  coalesce_dims(g.red_sizes, g.red_strides);
  const bool rows = g.red_sizes.size() == 1 && g.red_strides[0] == 1;
  int64_t inner = -1;
  for (size_t k = 0; k < g.kept_sizes.size(); ++k)
    if (g.kept_strides[k] == 1 && g.kept_sizes[k] > 1) inner = int64_t(k);
  if (inner >= 0 && (!rows || g.N == 1)) {
    Shape out_strides = contiguous_strides(g.kept_sizes);
    g.rows = false;
    g.inner = g.kept_sizes[size_t(inner)];
    g.inner_out_stride = out_strides[size_t(inner)];
    for (size_t k = 0; k < g.kept_sizes.size(); ++k) {
      if (int64_t(k) == inner) continue;
      g.outer_sizes.push_back(g.kept_sizes[k]);
      g.outer_strides.push_back(g.kept_strides[k]);
      g.outer_out_strides.push_back(out_strides[k]);
    }
    return g;
  }
  if (rows) return g;
  // Neither layout: copy into (kept, reduced) order, then reduce rows.
  Shape sizes, strides;
  for (int pass = 0; pass < 2; ++pass)
    for (int64_t d = 0; d < x.dim(); ++d)
      if (mask[size_t(d)] == (pass == 1)) {
        sizes.push_back(x.size(d));
        strides.push_back(x.stride(d));
      }
  g.x = contiguous_raw(x.alias(sizes, strides, x.storage_offset()));
  g.kept_sizes = {g.M};
  g.kept_strides = {g.N};
  g.red_sizes = {g.N};
  g.red_strides = {1};
  return g;
}

template <class T, class R> void run_span(const R& r, typename R::Acc& a, const T* p, int64_t n, int64_t j0) {
  if constexpr (requires { r.run(a, p, n, j0); }) {
    r.run(a, p, n, j0);
  } else {
    for (int64_t j = 0; j < n; ++j) r.step(a, p[j], j0 + j);
  }
}

template <class T, class R> void reduce_rows(const ReduceGeometry& g, const R& r) {
  using Acc = typename R::Acc;
  const T* base = static_cast<const T*>(g.x.data_ptr());
  const int64_t M = g.M, N = g.N;
  const int64_t C = (N + kReduceChunk - 1) / kReduceChunk;  // chunks per row
  if (C == 1) {
    parallel_for(0, M, std::max<int64_t>(1, kElementwiseGrain / N), [&](int64_t b, int64_t e) {
      Odometer row(g.kept_sizes, g.kept_strides, b);
      for (int64_t m = b; m < e; ++m, row.next()) {
        Acc a = r.init(m);
        run_span<T>(r, a, base + row.off, N, 0);
        r.finish(m, a, N);
      }
    });
    return;
  }
  std::vector<Acc> part(size_t(M * C));
  parallel_for(0, M * C, 1, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      const int64_t m = t / C, j0 = (t % C) * kReduceChunk;
      Acc a = r.init(m);
      run_span<T>(r, a, base + Odometer(g.kept_sizes, g.kept_strides, m).off + j0, std::min(kReduceChunk, N - j0), j0);
      part[size_t(t)] = a;
    }
  });
  parallel_for(0, M, std::max<int64_t>(1, kElementwiseGrain / C), [&](int64_t b, int64_t e) {
    for (int64_t m = b; m < e; ++m) {
      Acc a = part[size_t(m * C)];
      for (int64_t c = 1; c < C; ++c) r.merge(a, part[size_t(m * C + c)]);
      r.finish(m, a, N);
    }
  });
}

template <class T, class R> void reduce_columns(const ReduceGeometry& g, const R& r) {
  using Acc = typename R::Acc;
  const T* base = static_cast<const T*>(g.x.data_ptr());
  const int64_t M = g.M, N = g.N, inner = g.inner;
  const int64_t outer = M / inner;
  const int64_t B = std::min(inner, kColumnBlock);
  const int64_t blocks = outer * ((inner + B - 1) / B);
  int64_t RC = 1;  // slab chunks
  if (M * N > kElementwiseGrain)
    RC = std::clamp((kColumnTasks + blocks - 1) / blocks, int64_t(1), std::max<int64_t>(1, N / kMinSlabs));
  const int64_t slabs = (N + RC - 1) / RC;
  RC = (N + slabs - 1) / slabs;
  std::vector<Acc> part(size_t(RC > 1 ? M * RC : 0));
  const int64_t per_block = (inner + B - 1) / B;
  parallel_for(0, blocks * RC, std::max<int64_t>(1, kElementwiseGrain / (B * slabs)), [&](int64_t tb, int64_t te) {
    std::vector<Acc> acc(static_cast<size_t>(B));
    for (int64_t t = tb; t < te; ++t) {
      const int64_t c = t / blocks, o = (t % blocks) / per_block, i0 = (t % per_block) * B;
      const int64_t w = std::min(B, inner - i0);
      const Odometer in_o(g.outer_sizes, g.outer_strides, o), out_o(g.outer_sizes, g.outer_out_strides, o);
      auto out_index = [&](int64_t i) { return out_o.off + (i0 + i) * g.inner_out_stride; };
      for (int64_t i = 0; i < w; ++i) acc[size_t(i)] = r.init(out_index(i));
      const int64_t r0 = c * slabs, r1 = std::min(N, r0 + slabs);
      Odometer slab(g.red_sizes, g.red_strides, r0);
      Acc* a = acc.data();
      const T* col = base + in_o.off + i0;
      int64_t j = r0;
      // Four slabs per sweep, each column still folded in slab order: the
      // accumulators are loaded and stored once per four elements.
      for (; j + 4 <= r1; j += 4) {
        const T* s[4];
        for (int k = 0; k < 4; ++k, slab.next()) s[k] = col + slab.off;
        for (int64_t i = 0; i < w; ++i) {
          Acc ai = a[i];
          r.step(ai, s[0][i], j);
          r.step(ai, s[1][i], j + 1);
          r.step(ai, s[2][i], j + 2);
          r.step(ai, s[3][i], j + 3);
          a[i] = ai;
        }
      }
      for (; j < r1; ++j, slab.next()) {
        const T* s = col + slab.off;
        for (int64_t i = 0; i < w; ++i) r.step(a[i], s[i], j);
      }
      for (int64_t i = 0; i < w; ++i) {
        if (RC == 1)
          r.finish(out_index(i), a[i], N);
        else
          part[size_t(c * M + out_index(i))] = a[i];
      }
    }
  });
  if (RC == 1) return;
  parallel_for(0, M, std::max<int64_t>(1, kElementwiseGrain / RC), [&](int64_t b, int64_t e) {
    for (int64_t m = b; m < e; ++m) {
      Acc a = part[size_t(m)];
      for (int64_t c = 1; c < RC; ++c) r.merge(a, part[size_t(c * M + m)]);
      r.finish(m, a, N);
    }
  });
}

// Runs reducer r over x (element type T), reducing the dims where mask is true.
template <class T, class R> void reduce_with(const ReduceGeometry& g, const R& r) {
  if (g.M == 0) return;
  if (g.N == 0) {  // nothing to fold: every output is its initial state
    for (int64_t m = 0; m < g.M; ++m) r.finish(m, r.init(m), 0);
    return;
  }
  if (g.rows)
    reduce_rows<T>(g, r);
  else
    reduce_columns<T>(g, r);
}

}  // namespace ks::cpu
