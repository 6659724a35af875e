// tests/support/testing.h — helpers shared by the doctest suites: random
// float64 leaves in several memory layouts (for gradchecks that must cover
// non-contiguous inputs), closeness checks against plain-loop references, and
// a gradcheck assertion that prints the worst element on failure.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "keystone.h"

namespace ks::testing {

// True in AddressSanitizer builds, where training tests run shortened. GCC
// defines __SANITIZE_ADDRESS__; clang answers __has_feature instead.
#if defined(__SANITIZE_ADDRESS__)
#define KS_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KS_TEST_ASAN 1
#endif
#endif
#ifdef KS_TEST_ASAN
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

// A float64 leaf with values in [-1, 1) (or [lo, hi)), requiring grad.
inline Tensor leaf64(const Shape& shape, uint64_t seed, double lo = -1, double hi = 1) {
  Generator g(seed);
  Tensor t = empty(shape, {.dtype = kFloat64});
  uniform_(t, lo, hi, &g);
  t.set_requires_grad(true);
  return t;
}

// The 16-bit dtypes; the unit roundoff of each (half the distance from 1 to
// the next value); and values in [lo, hi) already representable in one of
// them, as a detached CPU tensor.
constexpr DType kHalfTypes[] = {kBFloat16, kFloat16};
inline double unit_roundoff(DType d) { return d == kBFloat16 ? std::ldexp(1.0, -8) : std::ldexp(1.0, -11); }
inline Tensor half_leaf(DType d, const Shape& shape, uint64_t seed, double lo = -2, double hi = 2) {
  return detach(to(leaf64(shape, seed, lo, hi), d));
}

// The layouts a kernel must handle, each as a float64 leaf of `shape` with
// requires_grad: contiguous; permuted (dims reversed in memory); sliced (every
// other element of a larger tensor along the last dim).
enum class Layout { Contiguous, Permuted, Sliced };
inline std::string layout_name(Layout l) {
  return l == Layout::Contiguous ? "contiguous" : l == Layout::Permuted ? "permuted" : "sliced";
}
inline Tensor leaf64(const Shape& shape, uint64_t seed, Layout layout, double lo = -1, double hi = 1) {
  if (layout == Layout::Contiguous || shape.size() < 1) return leaf64(shape, seed, lo, hi);
  Tensor base;
  Tensor v;
  if (layout == Layout::Permuted) {
    Shape rev(shape.rbegin(), shape.rend());
    base = leaf64(rev, seed, lo, hi);
    std::vector<int64_t> dims;
    for (int64_t d = int64_t(shape.size()) - 1; d >= 0; --d) dims.push_back(d);
    v = permute(base, dims);
  } else {
    Shape wide = shape;
    wide.back() *= 2;
    base = leaf64(wide, seed, lo, hi);
    v = slice(base, -1, 0, wide.back(), 2);
  }
  Tensor out = detach(v);
  out.set_requires_grad(true);
  return out;
}
inline std::vector<Layout> all_layouts() { return {Layout::Contiguous, Layout::Permuted, Layout::Sliced}; }

// CHECK that `actual` has `expected` values (row-major) within atol + rtol*|e|.
inline void check_close(const Tensor& actual, const std::vector<double>& expected, double atol = 1e-6,
                        double rtol = 1e-5) {
  std::vector<double> a = actual.to_vector<double>();
  REQUIRE(a.size() == expected.size());
  for (size_t i = 0; i < a.size(); ++i) {
    bool same_nan = std::isnan(a[i]) && std::isnan(expected[i]);
    bool same_inf = std::isinf(a[i]) && a[i] == expected[i];
    if (same_nan || same_inf) continue;
    INFO("element ", i, ": got ", a[i], ", expected ", expected[i]);
    CHECK(std::fabs(a[i] - expected[i]) <= atol + rtol * std::fabs(expected[i]));
  }
}
inline void check_close(const Tensor& actual, const Tensor& expected, double atol = 1e-6, double rtol = 1e-5) {
  CHECK(actual.sizes() == expected.sizes());
  check_close(actual, expected.to_vector<double>(), atol, rtol);
}

}  // namespace ks::testing

// Runs ks::gradcheck and fails the test with its report.
#define CHECK_GRADCHECK(...)                              \
  do {                                                    \
    auto ks_gc_result = ::ks::gradcheck(__VA_ARGS__);     \
    CHECK_MESSAGE(ks_gc_result.ok, ks_gc_result.message); \
  } while (0)

// Runs ks::gradgradcheck (second derivatives) and fails the test with its report.
#define CHECK_GRADGRADCHECK(...)                            \
  do {                                                      \
    auto ks_ggc_result = ::ks::gradgradcheck(__VA_ARGS__);  \
    CHECK_MESSAGE(ks_ggc_result.ok, ks_ggc_result.message); \
  } while (0)
