// ops/compare_kernels.h — the kernels of every comparison and logical op and
// of where and masked_fill, written once over the backend's elementwise loop
// (Loops::map: cpu_map for CpuLoops, cuda_map for CudaLoops).
// register_compare_kernels<Loops>(device) fills every op's tables from
// CompareOps and LogicalOps, so a backend registers them all in one line and
// a new op needs no edit here.
// Not here: the formulas (compare_formulas.h), checks and broadcasting (compare.cpp).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "core/dtype.h"
#include "core/tensor.h"
#include "ops/compare.h"
#include "ops/kernel_dtypes.h"

namespace ks::compare_kernels {

// a (op) b with both of type U (the scalar form: b = c, a converted to U first).
template <class Op, class T, class U = T> struct Compare {
  U c;
  KS_HOST_DEVICE bool operator()(T x) const { return Op::f(U(x), c); }
  KS_HOST_DEVICE bool operator()(T x, T y) const { return Op::f(x, y); }
};
template <class Op> struct Logical {
  KS_HOST_DEVICE bool operator()(uint8_t x) const { return Op::f(x); }
  KS_HOST_DEVICE bool operator()(uint8_t x, uint8_t y) const { return Op::f(x, y); }
};

template <class Op, class Loops> void compare(const Tensor& out, const Tensor& a, const Tensor& b) {
  dispatch_numeric_on<Loops>(a.dtype(), "compare", [&](auto tag) {
    using S = typename decltype(tag)::type;
    Loops::template map<bool, S, S>(widened<bool, S, S>(Compare<Op, compute_t<S>>{}), out, {a, b});
  });
}

// a (op) s, compared where it is exact: in T for floating T, and for integer
// T when s is one of T's values, else in double (which holds every int32 and
// every int64 a model uses as a label or index). For a 16-bit a, s is first
// rounded to a's dtype, as PyTorch does (bfloat16 1.0 == 1.001 is true).
template <class Op, class Loops> void compare_scalar(const Tensor& out, const Tensor& a, double s) {
  dispatch_numeric_on<Loops>(a.dtype(), "compare", [&](auto tag) {
    using S = typename decltype(tag)::type;
    using T = compute_t<S>;
    auto against = [&](auto c) {
      Loops::template map<bool, S>(widened<bool, S>(Compare<Op, T, decltype(c)>{c}), out, {a});
    };
    if constexpr (is_16bit_v<S>) {
      against(widen(S(T(s))));
    } else if constexpr (std::is_floating_point_v<T>) {
      against(T(s));
    } else {
      const bool in_t = std::trunc(s) == s && s >= double(std::numeric_limits<T>::lowest()) &&
                        s < -double(std::numeric_limits<T>::lowest());
      if (in_t)
        against(T(s));
      else
        against(s);
    }
  });
}

// b is ignored by a one-input op (logical_not).
template <class Op, class Loops> void logical(const Tensor& out, const Tensor& a, const Tensor& b) {
  using U = uint8_t;
  if constexpr (requires(U x) { Op::f(x, x); })
    Loops::template map<bool, U, U>(Logical<Op>{}, out, {a, b});
  else
    Loops::template map<bool, U>(Logical<Op>{}, out, {a});
}

template <class Loops> void where(const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b) {
  dispatch_all_on<Loops>(out.dtype(), "where", [&](auto tag) {
    using T = typename decltype(tag)::type;
    Loops::template map<T, uint8_t, T, T>(compare_ops::Where<T>{}, out, {cond, a, b});
  });
}

template <class Loops>
void masked_fill(const Tensor& out, const Tensor& x, const Tensor& mask, double value, bool fill_when) {
  dispatch_all_on<Loops>(out.dtype(), "masked_fill", [&](auto tag) {
    using T = typename decltype(tag)::type;
    Loops::template map<T, T, uint8_t>(compare_ops::MaskedFill<T>{convert<T>(value), fill_when}, out, {x, mask});
  });
}

// Registers the kernels of ops/compare.h, every op of CompareOps and LogicalOps, as `device`'s.
template <class Loops> bool register_compare_kernels(DeviceType device) {
  for_each_op<CompareOps>([&]<class Op>() {
    compare_kernel<Op>.set(device, compare<Op, Loops>);
    compare_scalar_kernel<Op>.set(device, compare_scalar<Op, Loops>);
  });
  for_each_op<LogicalOps>([&]<class Op>() { logical_kernel<Op>.set(device, logical<Op, Loops>); });
  where_kernel.set(device, where<Loops>);
  masked_fill_kernel.set(device, masked_fill<Loops>);
  return true;
}

}  // namespace ks::compare_kernels
