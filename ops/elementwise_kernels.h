// ops/elementwise_kernels.h — the kernels of every binary, scalar and fused
// in-place op, written once over the backend's elementwise loop (Loops::map:
// cpu_map for CpuLoops in ops/cpu/loops.h, cuda_map for CudaLoops in
// core/cuda/loops.cuh), which runs them over any strides and broadcast views.
// register_elementwise_kernels<Loops>(device) fills every op's tables from
// BinaryOps, ScalarOps and InplaceOps, so a backend registers them all in one
// line and a new op needs no edit here.
// bfloat16 and float16 compute in float32 where the backend takes them
// (ops/kernel_dtypes.h): operands widen as they load, results round once.
// In-place updates pass the target as both output and first input: each
// element reads and writes only itself, and ops/inplace.cpp has already
// copied any operand that partially overlaps it.
// Not here: the formulas (elementwise_formulas.h), checks and autograd.
#pragma once

#include "core/dtype.h"
#include "core/tensor.h"
#include "ops/elementwise.h"
#include "ops/inplace.h"
#include "ops/kernel_dtypes.h"

namespace ks::elementwise_kernels {

// Op's formulas as the loops' functors; c is the number of scalar and in-place ops.
template <class Op, class T> struct F {
  T c;
  KS_HOST_DEVICE T operator()(T x) const { return Op::f(x, c); }
  KS_HOST_DEVICE T operator()(T x, T y) const {
    if constexpr (requires { Op::f(x, y, c); })
      return Op::f(x, y, c);
    else
      return Op::f(x, y);
  }
  KS_HOST_DEVICE T operator()(T x, T y, T z) const { return Op::f(x, y, z, c); }
};
template <class Op, class T> struct DA {
  KS_HOST_DEVICE T operator()(T g, T y) const { return Op::da(g, y); }
  KS_HOST_DEVICE T operator()(T g, T x, T y) const { return Op::da(g, x, y); }
};
template <class Op, class T> struct DB {
  KS_HOST_DEVICE T operator()(T g, T x, T y) const { return Op::db(g, x, y); }
};
// Op::daa, dab or dbb of gg · g (the second derivatives are linear in g too).
template <class Op, class T, int Which> struct D2 {
  KS_HOST_DEVICE T operator()(T gg, T g, T x, T y) const {
    if constexpr (Which == 0)
      return Op::daa(T(gg * g), x, y);
    else if constexpr (Which == 1)
      return Op::dab(T(gg * g), x, y);
    else
      return Op::dbb(T(gg * g), x, y);
  }
};

// run(tag) over the dtypes Op takes on Loops' backend; the tag's type is the stored one (S below).
template <class Op, class Loops, class Run> void dispatch(DType d, Run&& run) {
  if constexpr (Op::integers)
    dispatch_numeric_on<Loops>(d, "elementwise op", run);
  else
    dispatch_floating_on<Loops>(d, "elementwise op", run);
}

template <class Op, class Loops> void binary(const Tensor& out, const Tensor& a, const Tensor& b) {
  dispatch<Op, Loops>(out.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    Loops::template map<S, S, S>(widened<S, S, S>(F<Op, compute_t<S>>{}), out, {a, b});
  });
}

// The gradient for input `which` (0: a, 1: b).
template <class Op, class Loops>
void binary_backward(int which, const Tensor& gi, const Tensor& go, const Tensor& a, const Tensor& b) {
  dispatch_floating_on<Loops>(gi.dtype(), "binary backward", [&](auto tag) {
    using S = typename decltype(tag)::type;
    using T = compute_t<S>;
    if (which == 1) return Loops::template map<S, S, S, S>(widened<S, S, S, S>(DB<Op, T>{}), gi, {go, a, b});
    if constexpr (requires(T g, T y) { Op::da(g, y); })
      Loops::template map<S, S, S>(widened<S, S, S>(DA<Op, T>{}), gi, {go, b});
    else
      Loops::template map<S, S, S, S>(widened<S, S, S, S>(DA<Op, T>{}), gi, {go, a, b});
  });
}

// The second derivative `which` (0: ∂²/∂a², 1: ∂²/∂a∂b, 2: ∂²/∂b²).
template <class Op, class Loops>
void binary_double_backward(int which, const Tensor& gi, const Tensor& gg, const Tensor& go, const Tensor& a,
                            const Tensor& b) {
  dispatch_floating_on<Loops>(gi.dtype(), "binary double backward", [&](auto tag) {
    using S = typename decltype(tag)::type;
    using T = compute_t<S>;
    auto run = [&](auto d2) { Loops::template map<S, S, S, S, S>(widened<S, S, S, S, S>(d2), gi, {gg, go, a, b}); };
    if (which == 0) return run(D2<Op, T, 0>{});
    if (which == 1) return run(D2<Op, T, 1>{});
    run(D2<Op, T, 2>{});
  });
}

template <class Op, class Loops> void scalar(double s, const Tensor& out, const Tensor& x) {
  dispatch<Op, Loops>(out.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    using T = compute_t<S>;
    Loops::template map<S, S>(widened<S, S>(F<Op, T>{static_cast<T>(s)}), out, {x});
  });
}

template <class Op, class Loops> void inplace(double alpha, const Tensor& t, const Tensor& a, const Tensor& b) {
  dispatch<Op, Loops>(t.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    using T = compute_t<S>;
    const F<Op, T> f{static_cast<T>(alpha)};
    if constexpr (requires(T x) { Op::f(x, x, x); })
      Loops::template map<S, S, S>(widened<S, S, S>(f), t, {t, a});
    else
      Loops::template map<S, S, S, S>(widened<S, S, S, S>(f), t, {t, a, b});
  });
}

// Registers the kernels of every op of BinaryOps, ScalarOps and InplaceOps as `device`'s.
template <class Loops> bool register_elementwise_kernels(DeviceType device) {
  for_each_op<BinaryOps>([&]<class Op>() {
    binary_kernel<Op>.set(device, binary<Op, Loops>);
    if constexpr (requires { &Op::template db<float>; })
      binary_backward_kernel<Op>.set(device, binary_backward<Op, Loops>);
    if constexpr (requires(float t) { Op::dbb(t, t, t); })
      binary_double_backward_kernel<Op>.set(device, binary_double_backward<Op, Loops>);
  });
  for_each_op<ScalarOps>([&]<class Op>() { scalar_kernel<Op>.set(device, scalar<Op, Loops>); });
  for_each_op<InplaceOps>([&]<class Op>() { inplace_kernel<Op>.set(device, inplace<Op, Loops>); });
  return true;
}

}  // namespace ks::elementwise_kernels
