// ops/cpu/dim_lines.h — the loop under every CPU kernel that works along one
// dim (cumsum, index_select/index_add, gather/scatter_add, triu/tril).
//
// Such a kernel sees its operands as (P, n, L): n is the size along `dim`, L
// is the innermost run of the dims after `dim` (coalesced across operands,
// so a contiguous tensor gives L = prod(sizes after dim)), and P counts every
// other position (the dims before `dim` and any inner dims that did not
// coalesce into L). For each operand k the element (p, j, l) lives at
//     offset(k, p) + j * step[k] + l * inner[k]      (in elements).
// for_each_line_block calls
//     body(base, l0, len)     base[k] = offset of (p, 0, l0) in operand k
// for every p and every block [l0, l0 + len) of l, in parallel; the body loops over
// j itself, so work along `dim` (a running sum, a scatter into one slot)
// stays in order inside one call — which is what keeps these kernels
// deterministic whatever the thread count. When every inner[k] is 1 the body's
// l loop is contiguous and vectorises.
// This header only walks geometry; it reads and writes no data.
#pragma once

#include <algorithm>
#include <array>

#include "core/parallel.h"
#include "core/strided_loop.h"
#include "core/tensor.h"

namespace ks::cpu {

template <int K> struct DimLines {
  Shape plane_sizes;                   // coalesced P dims, outermost first
  std::array<Shape, K> plane_strides;  // in elements
  int64_t P = 1, n = 1, L = 1;
  std::array<int64_t, K> step{}, inner{};

  int64_t offset(int k, int64_t p) const {
    int64_t off = 0;
    for (int64_t d = int64_t(plane_sizes.size()) - 1; d >= 0; --d) {
      off += (p % plane_sizes[d]) * plane_strides[k][d];
      p /= plane_sizes[d];
    }
    return off;
  }
  bool inner_contiguous() const {
    for (int k = 0; k < K; ++k)
      if (inner[k] != 1 && L > 1) return false;
    return true;
  }
};

// Geometry of `sizes` around `dim`, walked with each operand's own element
// strides (an operand may be larger than `sizes`: only the strides matter).
template <int K> DimLines<K> make_dim_lines(const Shape& sizes, int64_t dim, const std::array<Shape, K>& strides) {
  std::array<size_t, K> ones;
  ones.fill(1);
  DimLines<K> g;
  g.n = sizes[size_t(dim)];
  for (int k = 0; k < K; ++k) g.step[k] = strides[k][size_t(dim)];

  std::array<Shape, K> in_strides;
  for (int k = 0; k < K; ++k) in_strides[k].assign(strides[k].begin() + dim + 1, strides[k].end());
  auto in = make_strided_layout<K>(Shape(sizes.begin() + dim + 1, sizes.end()), in_strides, ones);
  g.L = in.sizes.back();
  for (int k = 0; k < K; ++k) g.inner[k] = in.strides[k].back();

  Shape psizes(sizes.begin(), sizes.begin() + dim);
  std::array<Shape, K> pstrides;
  for (int k = 0; k < K; ++k) pstrides[k].assign(strides[k].begin(), strides[k].begin() + dim);
  for (size_t d = 0; d + 1 < in.sizes.size(); ++d) {
    psizes.push_back(in.sizes[d]);
    for (int k = 0; k < K; ++k) pstrides[k].push_back(in.strides[k][d]);
  }
  auto plane = make_strided_layout<K>(psizes, pstrides, ones);
  g.plane_sizes = plane.sizes;
  g.plane_strides = plane.strides;
  g.P = numel_of(psizes);
  return g;
}

// Runs body(base, l0, len) over every (p, block of l). Blocks are cut small
// enough to give every thread work when P alone is too small, and chunks are
// grouped so that one task does about kElementwiseGrain elements.
template <int K, class Body> void for_each_line_block(const DimLines<K>& g, Body&& body) {
  if (g.P == 0 || g.L == 0) return;
  const int64_t n = std::max<int64_t>(g.n, 1);
  int64_t block = g.L;
  const int64_t want_units = 4 * int64_t(num_threads());
  while (block > 64 && g.P * ((g.L + block - 1) / block) < want_units && g.P * g.L * n > kElementwiseGrain)
    block = (block + 1) / 2;
  const int64_t nblocks = (g.L + block - 1) / block;
  const int64_t grain = std::max<int64_t>(1, kElementwiseGrain / (n * block));
  parallel_for(0, g.P * nblocks, grain, [&](int64_t b, int64_t e) {
    for (int64_t u = b; u < e; ++u) {
      const int64_t p = u / nblocks, l0 = (u % nblocks) * block;
      std::array<int64_t, K> base;
      for (int k = 0; k < K; ++k) base[k] = g.offset(k, p) + l0 * g.inner[k];
      body(base, l0, std::min(block, g.L - l0));
    }
  });
}

}  // namespace ks::cpu
