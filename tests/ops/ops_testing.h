// tests/ops/ops_testing.h — helpers that several files of the ops suite share:
// the run of a computation on one thread and on several (for the tests that
// results do not depend on the thread count), and the attention ops' inputs:
// key padding and float64 leaves. (The (B, 1, T, S) boolean mask of the keys a
// query may not see, for the composed references, is ops/attention_in_ops.h's.)
// Not here: helpers of one file, the suites' common ones (support/testing.h).
#pragma once

#include <algorithm>
#include <utility>
#include <vector>

#include "ops/attention_in_ops.h"
#include "support/testing.h"

namespace ks::testing {

// {f() on one thread, f() on at least two}; the thread count is put back.
template <class F> auto on_one_and_many_threads(F&& f) {
  const int saved = num_threads();
  set_num_threads(1);
  auto one = f();
  set_num_threads(std::max(2, saved));
  auto many = f();
  set_num_threads(saved);
  return std::pair{std::move(one), std::move(many)};
}

// Key padding (B, S) as bool, true at the (batch row b, key j) pairs of `hide`.
inline Tensor padding(int64_t B, int64_t S, const std::vector<std::pair<int64_t, int64_t>>& hide) {
  Tensor p = zeros({B, S}, {.dtype = kBool});
  for (auto [b, j] : hide) p.data<bool>()[b * S + j] = true;
  return p;
}

// A float64 leaf with values in [-2, 2), in layout l: the attention ops' inputs.
inline Tensor lf(const Shape& s, uint64_t seed, Layout l = Layout::Contiguous) { return leaf64(s, seed, l, -2, 2); }

}  // namespace ks::testing
