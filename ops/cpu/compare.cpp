// ops/cpu/compare.cpp — CPU kernels for comparisons, logical ops, where and masked_fill.
#include <cmath>
#include <cstdint>
#include <limits>

#include "ops/compare.h"
#include "ops/cpu/loops.h"

namespace ks::cpu {
namespace {

// out = a (op) c with a's elements converted to U first.
template <class T, class U>
void compare_with(CompareOp op, const Tensor& out, const Tensor& a, U c) {
  switch (op) {
    case CompareOp::Eq: cpu_map<bool, T>([c](T v) { return U(v) == c; }, out, {a}); return;
    case CompareOp::Ne: cpu_map<bool, T>([c](T v) { return U(v) != c; }, out, {a}); return;
    case CompareOp::Lt: cpu_map<bool, T>([c](T v) { return U(v) < c; }, out, {a}); return;
    case CompareOp::Le: cpu_map<bool, T>([c](T v) { return U(v) <= c; }, out, {a}); return;
    case CompareOp::Gt: cpu_map<bool, T>([c](T v) { return U(v) > c; }, out, {a}); return;
    case CompareOp::Ge: cpu_map<bool, T>([c](T v) { return U(v) >= c; }, out, {a}); return;
  }
}

void compare_cpu(CompareOp op, const Tensor& out, const Tensor& a, const Tensor& b) {
  dispatch_numeric(a.dtype(), "compare", [&](auto tag) {
    using T = typename decltype(tag)::type;
    switch (op) {
      case CompareOp::Eq: cpu_map<bool, T, T>([](T x, T y) { return x == y; }, out, {a, b}); return;
      case CompareOp::Ne: cpu_map<bool, T, T>([](T x, T y) { return x != y; }, out, {a, b}); return;
      case CompareOp::Lt: cpu_map<bool, T, T>([](T x, T y) { return x < y; }, out, {a, b}); return;
      case CompareOp::Le: cpu_map<bool, T, T>([](T x, T y) { return x <= y; }, out, {a, b}); return;
      case CompareOp::Gt: cpu_map<bool, T, T>([](T x, T y) { return x > y; }, out, {a, b}); return;
      case CompareOp::Ge: cpu_map<bool, T, T>([](T x, T y) { return x >= y; }, out, {a, b}); return;
    }
  });
}

void compare_scalar_cpu(CompareOp op, const Tensor& out, const Tensor& a, double s) {
  dispatch_numeric(a.dtype(), "compare", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      compare_with<T, T>(op, out, a, T(s));
    } else {
      // Exact in T when s is one of T's values, else exact in double (which
      // holds every int32 and every int64 a model uses as a label or index).
      const bool in_t = std::trunc(s) == s && s >= double(std::numeric_limits<T>::lowest()) &&
                        s < -double(std::numeric_limits<T>::lowest());
      if (in_t) compare_with<T, T>(op, out, a, T(s));
      else compare_with<T, double>(op, out, a, s);
    }
  });
}

// Masks are read as uint8_t (a bool tensor holds 0 or 1 per byte): GCC
// vectorises selects on uint8_t lanes but not on bool.
void logical_cpu(LogicalOp op, const Tensor& out, const Tensor& a, const Tensor& b) {
  using U = uint8_t;
  switch (op) {
    case LogicalOp::Not: cpu_map<bool, U>([](U x) { return x == 0; }, out, {a}); return;
    case LogicalOp::And: cpu_map<bool, U, U>([](U x, U y) { return (x & y) != 0; }, out, {a, b}); return;
    case LogicalOp::Or: cpu_map<bool, U, U>([](U x, U y) { return (x | y) != 0; }, out, {a, b}); return;
  }
}

void where_cpu(const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b) {
  dispatch_all(out.dtype(), "where", [&](auto tag) {
    using T = typename decltype(tag)::type;
    cpu_map<T, uint8_t, T, T>([](uint8_t c, T x, T y) { return c != 0 ? x : y; }, out, {cond, a, b});
  });
}

void masked_fill_cpu(const Tensor& out, const Tensor& x, const Tensor& mask, double value, bool fill_when) {
  dispatch_all(out.dtype(), "masked_fill", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T v = convert<T>(value);
    cpu_map<T, T, uint8_t>([v, fill_when](T e, uint8_t m) { return (m != 0) == fill_when ? v : e; }, out, {x, mask});
  });
}

}  // namespace
KS_REGISTER_KERNEL(compare_kernel, CPU, compare_cpu);
KS_REGISTER_KERNEL(compare_scalar_kernel, CPU, compare_scalar_cpu);
KS_REGISTER_KERNEL(logical_kernel, CPU, logical_cpu);
KS_REGISTER_KERNEL(where_kernel, CPU, where_cpu);
KS_REGISTER_KERNEL(masked_fill_kernel, CPU, masked_fill_cpu);
}  // namespace ks::cpu
