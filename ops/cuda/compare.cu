// ops/cuda/compare.cu — CUDA kernels for comparisons, logical ops, where and
// masked_fill (the rules of ops/compare.h, as in ops/cpu/compare.cpp).
// Masks are read as uint8_t: a bool tensor holds 0 or 1 per byte.
#include <cmath>
#include <cstdint>
#include <limits>

#include "core/cuda/loops.cuh"
#include "ops/compare.h"

namespace ks::cuda {
namespace {

// out = a (op) c with a's elements converted to U first.
template <class T, class U>
void compare_with(CompareOp op, const Tensor& out, const Tensor& a, U c) {
  switch (op) {
    case CompareOp::Eq: cuda_map<bool, T>([c] __device__(T v) { return U(v) == c; }, out, {a}); return;
    case CompareOp::Ne: cuda_map<bool, T>([c] __device__(T v) { return U(v) != c; }, out, {a}); return;
    case CompareOp::Lt: cuda_map<bool, T>([c] __device__(T v) { return U(v) < c; }, out, {a}); return;
    case CompareOp::Le: cuda_map<bool, T>([c] __device__(T v) { return U(v) <= c; }, out, {a}); return;
    case CompareOp::Gt: cuda_map<bool, T>([c] __device__(T v) { return U(v) > c; }, out, {a}); return;
    case CompareOp::Ge: cuda_map<bool, T>([c] __device__(T v) { return U(v) >= c; }, out, {a}); return;
  }
}

template <class T>
void compare_typed(CompareOp op, const Tensor& out, const Tensor& a, const Tensor& b) {
  switch (op) {
    case CompareOp::Eq: cuda_map<bool, T, T>([] __device__(T x, T y) { return x == y; }, out, {a, b}); return;
    case CompareOp::Ne: cuda_map<bool, T, T>([] __device__(T x, T y) { return x != y; }, out, {a, b}); return;
    case CompareOp::Lt: cuda_map<bool, T, T>([] __device__(T x, T y) { return x < y; }, out, {a, b}); return;
    case CompareOp::Le: cuda_map<bool, T, T>([] __device__(T x, T y) { return x <= y; }, out, {a, b}); return;
    case CompareOp::Gt: cuda_map<bool, T, T>([] __device__(T x, T y) { return x > y; }, out, {a, b}); return;
    case CompareOp::Ge: cuda_map<bool, T, T>([] __device__(T x, T y) { return x >= y; }, out, {a, b}); return;
  }
}

void compare_cuda(CompareOp op, const Tensor& out, const Tensor& a, const Tensor& b) {
  dispatch_numeric(a.dtype(), "compare", [&](auto tag) { compare_typed<typename decltype(tag)::type>(op, out, a, b); });
}

void compare_scalar_cuda(CompareOp op, const Tensor& out, const Tensor& a, double s) {
  dispatch_numeric(a.dtype(), "compare", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      compare_with<T, T>(op, out, a, T(s));
    } else {
      // Exact in T when s is one of T's values, else exact in double.
      const bool in_t = std::trunc(s) == s && s >= double(std::numeric_limits<T>::lowest()) &&
                        s < -double(std::numeric_limits<T>::lowest());
      if (in_t) compare_with<T, T>(op, out, a, T(s));
      else compare_with<T, double>(op, out, a, s);
    }
  });
}

void logical_cuda(LogicalOp op, const Tensor& out, const Tensor& a, const Tensor& b) {
  using U = uint8_t;
  switch (op) {
    case LogicalOp::Not: cuda_map<bool, U>([] __device__(U x) { return x == 0; }, out, {a}); return;
    case LogicalOp::And: cuda_map<bool, U, U>([] __device__(U x, U y) { return (x & y) != 0; }, out, {a, b}); return;
    case LogicalOp::Or: cuda_map<bool, U, U>([] __device__(U x, U y) { return (x | y) != 0; }, out, {a, b}); return;
  }
}

template <class T>
void where_typed(const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b) {
  cuda_map<T, uint8_t, T, T>([] __device__(uint8_t c, T x, T y) { return c != 0 ? x : y; }, out, {cond, a, b});
}

void where_cuda(const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b) {
  dispatch_all(out.dtype(), "where", [&](auto tag) { where_typed<typename decltype(tag)::type>(out, cond, a, b); });
}

template <class T>
void masked_fill_typed(const Tensor& out, const Tensor& x, const Tensor& mask, T v, bool fill_when) {
  cuda_map<T, T, uint8_t>([v, fill_when] __device__(T e, uint8_t m) { return (m != 0) == fill_when ? v : e; }, out,
                          {x, mask});
}

void masked_fill_cuda(const Tensor& out, const Tensor& x, const Tensor& mask, double value, bool fill_when) {
  dispatch_all(out.dtype(), "masked_fill", [&](auto tag) {
    using T = typename decltype(tag)::type;
    masked_fill_typed<T>(out, x, mask, convert<T>(value), fill_when);
  });
}

}  // namespace
KS_REGISTER_KERNEL(compare_kernel, CUDA, compare_cuda);
KS_REGISTER_KERNEL(compare_scalar_kernel, CUDA, compare_scalar_cuda);
KS_REGISTER_KERNEL(logical_kernel, CUDA, logical_cuda);
KS_REGISTER_KERNEL(where_kernel, CUDA, where_cuda);
KS_REGISTER_KERNEL(masked_fill_kernel, CUDA, masked_fill_cuda);
}  // namespace ks::cuda
