// ops/kernel_dtypes.h — which dtypes a kernel written once for every backend
// (ops/*_kernels.h, *_formulas.h) takes on the backend it is instantiated
// for, and the functor adapter that lets it compute bfloat16 and float16 in
// float32.
//
// A backend's loops type says `static constexpr bool computes_16bit = true`
// when its kernels may be instantiated for the 16-bit types (CpuLoops and
// CudaLoops both do; a backend that does not refuses them naming the dtype).
// widened<Out>(f) turns a functor f over compute types into one over stored
// types: each 16-bit argument is widened to float, f runs in float, and the
// result is rounded once to Out. For operands that are not 16-bit it returns
// f itself, so the float32 and float64 loops compile to what they were.
// Not here: the dtypes themselves and compute_t (core/dtype.h), the loops.
#pragma once

#include <type_traits>
#include <utility>

#include "core/dtype.h"
#include "core/host_device.h"

namespace ks {

template <class Loops> constexpr bool computes_16bit() {
  if constexpr (requires { Loops::computes_16bit; })
    return Loops::computes_16bit;
  else
    return false;
}

// dispatch_floating / dispatch_numeric, with the 16-bit types where the backend computes them.
template <class Loops, class F> decltype(auto) dispatch_floating_on(DType t, const char* op, F&& f) {
  if constexpr (computes_16bit<Loops>())
    return dispatch_floating16(t, op, std::forward<F>(f));
  else
    return dispatch_floating(t, op, std::forward<F>(f));
}
template <class Loops, class F> decltype(auto) dispatch_numeric_on(DType t, const char* op, F&& f) {
  if constexpr (computes_16bit<Loops>())
    return dispatch_numeric16(t, op, std::forward<F>(f));
  else
    return dispatch_numeric(t, op, std::forward<F>(f));
}

// dispatch_all, and the 16-bit types where the backend takes them (kernels that only move elements).
template <class Loops, class F> decltype(auto) dispatch_all_on(DType t, const char* op, F&& f) {
  if constexpr (computes_16bit<Loops>())
    return dispatch_storage(t, op, std::forward<F>(f));
  else
    return dispatch_all(t, op, std::forward<F>(f));
}

template <class X> KS_HOST_DEVICE compute_t<X> widen(X x) {
  if constexpr (is_16bit_v<X>)
    return static_cast<float>(x);
  else
    return x;
}

template <class Out, class Fn> struct Widened {
  Fn f;
  template <class... X> KS_HOST_DEVICE Out operator()(X... x) const { return Out(f(widen(x)...)); }
};

// f over stored operand types In... with result type Out (see the header).
template <class Out, class... In, class Fn> KS_HOST_DEVICE auto widened(Fn f) {
  if constexpr ((is_16bit_v<Out> || ... || is_16bit_v<In>))
    return Widened<Out, Fn>{f};
  else
    return f;
}

}  // namespace ks
