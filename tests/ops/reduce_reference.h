// tests/ops/reduce_reference.h — plain-loop references for the reduction
// tests: splits a tensor's elements into one group per output (row-major over
// the kept dims), each group in row-major order of the reduced dims, then
// applies a scalar fold written out in the test. Also the dim sets and input
// layouts every reduction is checked over.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "support/testing.h"

namespace ks::testing {

// The reduced elements of every output, in order.
inline std::vector<std::vector<double>> reduce_groups(const Tensor& x, const Dims& dims) {
  const int64_t nd = x.dim();
  std::vector<bool> red(size_t(nd), dims.empty());
  for (int64_t d : dims) red[size_t(d < 0 ? d + nd : d)] = true;
  int64_t outputs = 1;
  for (int64_t d = 0; d < nd; ++d)
    if (!red[size_t(d)]) outputs *= x.size(d);
  std::vector<std::vector<double>> groups(static_cast<size_t>(outputs));
  std::vector<double> v = x.to_vector<double>();
  for (int64_t i = 0; i < int64_t(v.size()); ++i) {
    int64_t rem = i, out = 0, scale = 1;
    for (int64_t d = nd - 1; d >= 0; --d) {
      int64_t k = rem % x.size(d);
      rem /= x.size(d);
      if (!red[size_t(d)]) {
        out += k * scale;
        scale *= x.size(d);
      }
    }
    groups[size_t(out)].push_back(v[size_t(i)]);
  }
  return groups;
}

// fold(group) for every output.
inline std::vector<double> reduce_reference(const Tensor& x, const Dims& dims,
                                            const std::function<double(const std::vector<double>&)>& fold) {
  std::vector<double> out;
  for (const auto& g : reduce_groups(x, dims)) out.push_back(fold(g));
  return out;
}

// Dim sets over a 3-d input: inner, outer, middle, several, all, negative, pairs.
inline std::vector<Dims> dim_sets() { return {{2}, {0}, {1}, {0, 2}, {}, {-1, 0}, {1, 2}, {0, 1}, {2, 1, 0}}; }

inline std::string dims_name(const Dims& d) { return str(d); }

// A (3, 4, 5) float64 input in each layout, plus a 2-d one sliced in its outer dim.
inline std::vector<Tensor> reduce_inputs(uint64_t seed, double lo = -1, double hi = 1) {
  std::vector<Tensor> xs;
  for (Layout l : all_layouts()) xs.push_back(leaf64({3, 4, 5}, seed, l, lo, hi));
  // Permuted in a non-reversing order, and sliced along the first dim.
  xs.push_back(detach(permute(leaf64({4, 5, 3}, seed + 1, lo, hi), {2, 0, 1})));
  xs.push_back(detach(slice(leaf64({6, 4, 5}, seed + 2, lo, hi), 0, 1, 6, 2)));
  return xs;
}

}  // namespace ks::testing
