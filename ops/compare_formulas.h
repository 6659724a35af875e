// ops/compare_formulas.h — the kernels of comparisons, logical ops, where
// and masked_fill (ops/compare.h), written once for the CPU and the GPU: the
// element rules are functors with KS_HOST_DEVICE call operators, and each
// kernel is a template over the backend's elementwise loop (Loops::map:
// cpu_map for CpuLoops, cuda_map for CudaLoops); the backends only register
// them (register_compare_kernels).
//
// Masks are read as uint8_t (a bool tensor holds 0 or 1 per byte): GCC
// vectorises selects on uint8_t lanes but not on bool.
// Not here: argument checks, broadcasting (compare.cpp), the loops (backends).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "core/dtype.h"
#include "core/host_device.h"
#include "core/tensor.h"
#include "ops/compare.h"

namespace ks::compare_formulas {

template <CompareOp Op, class U>
KS_HOST_DEVICE inline bool compare(U x, U y) {
  if constexpr (Op == CompareOp::Eq) return x == y;
  else if constexpr (Op == CompareOp::Ne) return x != y;
  else if constexpr (Op == CompareOp::Lt) return x < y;
  else if constexpr (Op == CompareOp::Le) return x <= y;
  else if constexpr (Op == CompareOp::Gt) return x > y;
  else return x >= y;
}

// a (op) b, both of type T.
template <CompareOp Op, class T>
struct CompareTensors {
  KS_HOST_DEVICE bool operator()(T x, T y) const { return compare<Op>(x, y); }
};

// a (op) c, with a's elements converted to U first.
template <CompareOp Op, class T, class U>
struct CompareScalar {
  U c;
  KS_HOST_DEVICE bool operator()(T v) const { return compare<Op>(U(v), c); }
};

template <CompareOp Op>
struct CompareTag {
  static constexpr CompareOp value = Op;
};

// run(CompareTag<op>{}): the run-time op as a compile-time one.
template <class Run>
void with_compare_op(CompareOp op, Run&& run) {
  switch (op) {
    case CompareOp::Eq: return run(CompareTag<CompareOp::Eq>{});
    case CompareOp::Ne: return run(CompareTag<CompareOp::Ne>{});
    case CompareOp::Lt: return run(CompareTag<CompareOp::Lt>{});
    case CompareOp::Le: return run(CompareTag<CompareOp::Le>{});
    case CompareOp::Gt: return run(CompareTag<CompareOp::Gt>{});
    case CompareOp::Ge: return run(CompareTag<CompareOp::Ge>{});
  }
}

// run(f) with f(T x, T y) = x (op) y.
template <class T, class Run>
void with_compare(CompareOp op, Run&& run) {
  with_compare_op(op, [&](auto tag) { run(CompareTensors<decltype(tag)::value, T>{}); });
}

// run(f) with f(T v) = v (op) s, compared where it is exact: in T for
// floating T, and for integer T when s is one of T's values, else in double
// (which holds every int32 and every int64 a model uses as a label or index).
template <class T, class Run>
void with_compare_scalar(CompareOp op, double s, Run&& run) {
  auto against = [&](auto c) {
    with_compare_op(op, [&](auto tag) { run(CompareScalar<decltype(tag)::value, T, decltype(c)>{c}); });
  };
  if constexpr (std::is_floating_point_v<T>) {
    against(T(s));
  } else {
    const bool in_t = std::trunc(s) == s && s >= double(std::numeric_limits<T>::lowest()) &&
                      s < -double(std::numeric_limits<T>::lowest());
    if (in_t) against(T(s));
    else against(s);
  }
}

template <LogicalOp Op>
struct Logical {
  KS_HOST_DEVICE bool operator()(uint8_t x) const { return x == 0; }  // Not
  KS_HOST_DEVICE bool operator()(uint8_t x, uint8_t y) const {
    if constexpr (Op == LogicalOp::And) return (x & y) != 0;
    else return (x | y) != 0;
  }
};

template <class T>
struct Where {
  KS_HOST_DEVICE T operator()(uint8_t c, T x, T y) const { return c != 0 ? x : y; }
};

// The fill value where the mask equals fill_when, else the element.
template <class T>
struct MaskedFill {
  T value;
  bool fill_when;
  KS_HOST_DEVICE T operator()(T e, uint8_t m) const { return (m != 0) == fill_when ? value : e; }
};

// The kernels of ops/compare.h for the backend whose loop is Loops.
template <class Loops>
struct compare_kernels {
  static void compare(CompareOp op, const Tensor& out, const Tensor& a, const Tensor& b) {
    dispatch_numeric(a.dtype(), "compare", [&](auto tag) {
      using T = typename decltype(tag)::type;
      with_compare<T>(op, [&](auto f) { Loops::template map<bool, T, T>(f, out, {a, b}); });
    });
  }

  static void compare_scalar(CompareOp op, const Tensor& out, const Tensor& a, double s) {
    dispatch_numeric(a.dtype(), "compare", [&](auto tag) {
      using T = typename decltype(tag)::type;
      with_compare_scalar<T>(op, s, [&](auto f) { Loops::template map<bool, T>(f, out, {a}); });
    });
  }

  static void logical(LogicalOp op, const Tensor& out, const Tensor& a, const Tensor& b) {
    using U = uint8_t;
    switch (op) {
      case LogicalOp::Not: return Loops::template map<bool, U>(Logical<LogicalOp::Not>{}, out, {a});
      case LogicalOp::And: return Loops::template map<bool, U, U>(Logical<LogicalOp::And>{}, out, {a, b});
      case LogicalOp::Or: return Loops::template map<bool, U, U>(Logical<LogicalOp::Or>{}, out, {a, b});
    }
  }

  static void where(const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b) {
    dispatch_all(out.dtype(), "where", [&](auto tag) {
      using T = typename decltype(tag)::type;
      Loops::template map<T, uint8_t, T, T>(Where<T>{}, out, {cond, a, b});
    });
  }

  static void masked_fill(const Tensor& out, const Tensor& x, const Tensor& mask, double value, bool fill_when) {
    dispatch_all(out.dtype(), "masked_fill", [&](auto tag) {
      using T = typename decltype(tag)::type;
      Loops::template map<T, T, uint8_t>(MaskedFill<T>{convert<T>(value), fill_when}, out, {x, mask});
    });
  }
};

// Registers compare_kernels<Loops> as `device`'s kernels of ops/compare.h.
template <class Loops>
bool register_compare_kernels(DeviceType device) {
  using K = compare_kernels<Loops>;
  compare_kernel.set(device, K::compare);
  compare_scalar_kernel.set(device, K::compare_scalar);
  logical_kernel.set(device, K::logical);
  where_kernel.set(device, K::where);
  masked_fill_kernel.set(device, K::masked_fill);
  return true;
}

}  // namespace ks::compare_formulas
