// core/strided_loop.h — the N-dimensional loop under every CPU kernel that
// walks tensors element by element (copies, elementwise ops, fills).
//
// Given a shape and, for each of N operands, its strides in elements (0 for a
// broadcast dim), it first coalesces dims that are laid out back to back in
// every operand (so a contiguous tensor becomes one flat dim), then calls
//     row(ptrs, n, byte_strides)
// once per innermost row of n elements, where ptrs[k] points at the row's
// first element of operand k. Rows are distributed over threads; a single
// long row is itself split. Kernels write the inner loop; a contiguous inner
// row (byte stride == itemsize) is the case the compiler vectorises.
#pragma once

#include <array>
#include <cstdint>

#include "core/parallel.h"
#include "core/tensor_impl.h"

namespace ks {

template <int N> struct StridedLayout {
  Shape sizes;                   // coalesced, outermost first; at least one dim
  std::array<Shape, N> strides;  // in bytes, per operand
};

// Coalesces `sizes` with per-operand element strides into a byte-stride layout.
template <int N>
StridedLayout<N> make_strided_layout(const Shape& sizes, const std::array<Shape, N>& elem_strides,
                                     const std::array<size_t, N>& itemsizes) {
  StridedLayout<N> out;
  // Drop size-1 dims (their stride is irrelevant), keep order.
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 1) continue;
    out.sizes.push_back(sizes[d]);
    for (int k = 0; k < N; ++k) out.strides[k].push_back(elem_strides[k][d] * int64_t(itemsizes[k]));
  }
  if (out.sizes.empty()) {
    out.sizes.push_back(1);
    for (int k = 0; k < N; ++k) out.strides[k].push_back(int64_t(itemsizes[k]));
  }
  // Merge dim d into d+1 when every operand steps over d+1 exactly once per step of d.
  Shape sizes_c{out.sizes.back()};
  std::array<Shape, N> strides_c;
  for (int k = 0; k < N; ++k) strides_c[k].push_back(out.strides[k].back());
  for (int64_t d = int64_t(out.sizes.size()) - 2; d >= 0; --d) {
    bool merge = true;
    for (int k = 0; k < N; ++k)
      if (out.strides[k][d] != strides_c[k].front() * sizes_c.front()) merge = false;
    if (merge) {
      sizes_c.front() *= out.sizes[d];
    } else {
      sizes_c.insert(sizes_c.begin(), out.sizes[d]);
      for (int k = 0; k < N; ++k) strides_c[k].insert(strides_c[k].begin(), out.strides[k][d]);
    }
  }
  out.sizes = std::move(sizes_c);
  out.strides = std::move(strides_c);
  return out;
}

// Runs row(ptrs, n, inner_byte_strides) over the layout, in parallel.
// `grain` is in elements.
template <int N, class Row>
void strided_for_each(const StridedLayout<N>& L, std::array<char*, N> base, int64_t grain, Row&& row) {
  const int64_t ndim = int64_t(L.sizes.size());
  const int64_t inner = L.sizes.back();
  std::array<int64_t, N> inner_stride;
  for (int k = 0; k < N; ++k) inner_stride[k] = L.strides[k].back();
  int64_t rows = 1;
  for (int64_t d = 0; d + 1 < ndim; ++d) rows *= L.sizes[d];

  if (rows == 1) {  // one long row: split it
    parallel_for(0, inner, grain, [&](int64_t b, int64_t e) {
      std::array<char*, N> p;
      for (int k = 0; k < N; ++k) p[k] = base[k] + b * inner_stride[k];
      row(p, e - b, inner_stride);
    });
    return;
  }
  int64_t row_grain = grain / (inner > 0 ? inner : 1);
  if (ndim == 2) {  // rows one outer stride apart: no odometer (short rows pay for it per row)
    std::array<int64_t, N> outer_stride;
    for (int k = 0; k < N; ++k) outer_stride[k] = L.strides[k][0];
    parallel_for(0, rows, row_grain < 1 ? 1 : row_grain, [&](int64_t rb, int64_t re) {
      std::array<char*, N> p;
      for (int k = 0; k < N; ++k) p[k] = base[k] + rb * outer_stride[k];
      for (int64_t r = rb; r < re; ++r) {
        row(p, inner, inner_stride);
        for (int k = 0; k < N; ++k) p[k] += outer_stride[k];
      }
    });
    return;
  }
  parallel_for(0, rows, row_grain < 1 ? 1 : row_grain, [&](int64_t rb, int64_t re) {
    // Decompose rb into the outer index once, then step it like an odometer.
    std::array<char*, N> p;
    Shape idx(size_t(ndim - 1), 0);
    int64_t rem = rb;
    for (int64_t d = ndim - 2; d >= 0; --d) {
      idx[d] = rem % L.sizes[d];
      rem /= L.sizes[d];
    }
    for (int64_t r = rb; r < re; ++r) {
      for (int k = 0; k < N; ++k) {
        char* q = base[k];
        for (int64_t d = 0; d + 1 < ndim; ++d) q += idx[d] * L.strides[k][d];
        p[k] = q;
      }
      row(p, inner, inner_stride);
      for (int64_t d = ndim - 2; d >= 0; --d) {
        if (++idx[d] < L.sizes[d]) break;
        idx[d] = 0;
      }
    }
  });
}

}  // namespace ks
