// tests/ops/elementwise_ref.h — plain-loop references for the elementwise
// tests: broadcasting done by explicit index arithmetic over row-major value
// lists, in double, without calling any Keystone op.
#pragma once

#include <vector>

#include "support/testing.h"

namespace ks::testing {

// Flat row-major position in a tensor of `shape`, right-aligned against the
// multi-index `idx` of an output of larger rank, reading index 0 along size-1 dims.
inline int64_t broadcast_position(const Shape& shape, const Shape& idx) {
  const size_t lead = idx.size() - shape.size();
  int64_t flat = 0;
  for (size_t d = 0; d < shape.size(); ++d) flat = flat * shape[d] + (shape[d] == 1 ? 0 : idx[lead + d]);
  return flat;
}

// Calls f(multi_index) for every index of `shape`, in row-major order.
template <class F> void for_each_index(const Shape& shape, F f) {
  Shape idx(shape.size(), 0);
  for (int64_t n = numel_of(shape), i = 0; i < n; ++i) {
    f(idx);
    for (int64_t d = int64_t(shape.size()) - 1; d >= 0; --d) {
      if (++idx[size_t(d)] < shape[size_t(d)]) break;
      idx[size_t(d)] = 0;
    }
  }
}

// out[i] = f(a[i'], b[i'']) over `out_shape`, with a and b broadcast by hand.
template <class F> std::vector<double> ref_binary(const Tensor& a, const Tensor& b, const Shape& out_shape, F f) {
  const std::vector<double> va = a.to_vector<double>(), vb = b.to_vector<double>();
  std::vector<double> out;
  for_each_index(out_shape, [&](const Shape& idx) {
    out.push_back(f(va[size_t(broadcast_position(a.sizes(), idx))], vb[size_t(broadcast_position(b.sizes(), idx))]));
  });
  return out;
}

template <class F>
std::vector<double> ref_ternary(const Tensor& a, const Tensor& b, const Tensor& c, const Shape& out_shape, F f) {
  const std::vector<double> va = a.to_vector<double>(), vb = b.to_vector<double>(), vc = c.to_vector<double>();
  std::vector<double> out;
  for_each_index(out_shape, [&](const Shape& idx) {
    out.push_back(f(va[size_t(broadcast_position(a.sizes(), idx))], vb[size_t(broadcast_position(b.sizes(), idx))],
                    vc[size_t(broadcast_position(c.sizes(), idx))]));
  });
  return out;
}

template <class F> std::vector<double> ref_unary(const Tensor& x, F f) {
  std::vector<double> out;
  for (double v : x.to_vector<double>()) out.push_back(f(v));
  return out;
}

// Random integer-valued tensor in [lo, hi) of `dtype`, so equalities and ties occur.
inline Tensor small_ints(const Shape& shape, uint64_t seed, DType dtype, int64_t lo = -3, int64_t hi = 4) {
  Generator g(seed);
  return randint(lo, hi, shape, {.dtype = dtype}, &g);
}

}  // namespace ks::testing
