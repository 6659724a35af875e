// ops/unary_kernels.h — the kernels of every unary op, written once over the
// backend's elementwise loop: unary_forward<Op, Loops> runs Op::f,
// unary_backward<Op, Loops> Op::df and unary_double_backward<Op, Loops>
// Op::ddf through Loops::map (cpu_map for
// CpuLoops in ops/cpu/loops.h, cuda_map for CudaLoops in core/cuda/loops.cuh).
// register_unary_kernels<Loops>(device) fills every op's tables from
// UnaryOps, so a backend registers the whole family in one line and a new op
// needs no edit here.
// bfloat16 and float16 compute in float32 where the backend takes them
// (ops/kernel_dtypes.h).
// Not here: the formulas (unary_formulas.h), checks and autograd (unary.cpp).
#pragma once

#include <limits>
#include <type_traits>

#include "core/dtype.h"
#include "core/tensor.h"
#include "ops/kernel_dtypes.h"
#include "ops/unary.h"

namespace ks::unary_kernels {

// A parameter in T: for an integer T (clamp's bounds) ±inf, an absent bound, saturates.
template <class T> T arg(double v) {
  if constexpr (std::is_integral_v<T>) {
    if (v <= double(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
    if (v >= double(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
  }
  return T(v);
}

// Op::f, Op::df and Op::ddf as the loops' functors; p is passed only to the ops that take it.
template <class Op, class T> struct Forward {
  UnaryArgs<T> p;
  KS_HOST_DEVICE T operator()(T x) const {
    if constexpr (requires { Op::f(x); })
      return Op::f(x);
    else
      return Op::f(x, p);
  }
};
template <class Op, class T> struct Backward {
  UnaryArgs<T> p;
  KS_HOST_DEVICE T operator()(T g, T s) const {
    if constexpr (requires { Op::df(g, s); })
      return Op::df(g, s);
    else
      return Op::df(g, s, p);
  }
};
template <class Op, class T> struct DoubleBackward {  // ddf(gg · g, s): df is linear in g
  UnaryArgs<T> p;
  KS_HOST_DEVICE T operator()(T gg, T g, T s) const {
    if constexpr (requires { Op::ddf(g, s); })
      return Op::ddf(T(gg * g), s);
    else
      return Op::ddf(T(gg * g), s, p);
  }
};

template <class Op, class Loops> void unary_forward(const UnaryParams& p, const Tensor& out, const Tensor& x) {
  auto run = [&](auto tag) {
    using S = typename decltype(tag)::type;
    using T = compute_t<S>;
    Loops::template map<S, S>(widened<S, S>(Forward<Op, T>{{arg<T>(p.a), arg<T>(p.b)}}), out, {x});
  };
  if constexpr (Op::integers)
    dispatch_numeric_on<Loops>(out.dtype(), Op::name, run);
  else
    dispatch_floating_on<Loops>(out.dtype(), Op::name, run);
}

template <class Op, class Loops>
void unary_backward(const UnaryParams& p, const Tensor& gi, const Tensor& go, const Tensor& s) {
  dispatch_floating_on<Loops>(gi.dtype(), Op::node, [&](auto tag) {
    using S = typename decltype(tag)::type;
    using T = compute_t<S>;
    Loops::template map<S, S, S>(widened<S, S, S>(Backward<Op, T>{{T(p.a), T(p.b)}}), gi, {go, s});
  });
}

template <class Op, class Loops>
void unary_double_backward(const UnaryParams& p, const Tensor& gs, const Tensor& gg, const Tensor& go,
                           const Tensor& s) {
  dispatch_floating_on<Loops>(gs.dtype(), Op::node, [&](auto tag) {
    using S = typename decltype(tag)::type;
    using T = compute_t<S>;
    Loops::template map<S, S, S, S>(widened<S, S, S, S>(DoubleBackward<Op, T>{{T(p.a), T(p.b)}}), gs, {gg, go, s});
  });
}

// Registers Op's kernels as `device`'s (a Saves::Self op has no backward
// kernels: its backward is its forward). An op outside UnaryOps calls this
// itself (tests/ops/test_readme_op.cpp).
template <class Op, class Loops> bool register_unary_op(DeviceType device) {
  unary_kernel<Op>.set(device, unary_forward<Op, Loops>);
  if constexpr (Op::saves != Saves::Self) {
    unary_backward_kernel<Op>.set(device, unary_backward<Op, Loops>);
    unary_double_backward_kernel<Op>.set(device, unary_double_backward<Op, Loops>);
  }
  return true;
}

// Registers the kernels of every op of UnaryOps as `device`'s.
template <class Loops> bool register_unary_kernels(DeviceType device) {
  for_each_op<UnaryOps>([&]<class Op>() { register_unary_op<Op, Loops>(device); });
  return true;
}

}  // namespace ks::unary_kernels
