// ops/reduce_grad_kernels.h — the kernel of every piece of ReduceGradOps,
// written once over the backend's elementwise loop: reduce_grad<Op, Loops>
// runs Op::f through Loops::map (cpu_map for CpuLoops in ops/cpu/loops.h,
// cuda_map for CudaLoops in core/cuda/loops.cuh), with the inputs' element
// types read off f's parameters.
// register_reduce_grad_kernels<Loops>(device) fills every piece's table from
// ReduceGradOps, so a backend registers the whole family in one line and a new
// piece needs no edit here.
// Not here: the formulas (reduce_grad_formulas.h), the backwards (reduce.cpp).
#pragma once

#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/dtype.h"
#include "core/tensor.h"
#include "ops/reduce.h"
#include "ops/reduce_grad_formulas.h"

namespace ks::reduce_grad_kernels {

// The parameters of Op::f<T>, as a std::tuple, and whether the last is ReduceGradArgs.
template <class F> struct Params;
template <class R, class... A> struct Params<R (*)(A...)> { using type = std::tuple<A...>; };
template <class Op, class T> using ParamsOf = typename Params<decltype(&Op::template f<T>)>::type;
template <class Op, class T>
inline constexpr bool takes_args =
    std::is_same_v<std::tuple_element_t<std::tuple_size_v<ParamsOf<Op, T>> - 1, ParamsOf<Op, T>>, ReduceGradArgs>;
// The number of input tensors: f's parameters less ReduceGradArgs.
template <class Op, class T>
inline constexpr std::size_t arity = std::tuple_size_v<ParamsOf<Op, T>> - (takes_args<Op, T> ? 1 : 0);

// Op::f as the loops' functor over inputs of element types In; args passed
// only to the pieces that take them.
template <class Op, class T, class... In> struct F {
  ReduceGradArgs args;
  KS_HOST_DEVICE T operator()(In... x) const {
    if constexpr (takes_args<Op, T>)
      return Op::template f<T>(x..., args);
    else
      return Op::template f<T>(x...);
  }
};

// Loops::map of Op::f over the first arity<Op, T> tensors of `in`.
template <class Op, class Loops, class T, std::size_t... I>
void map_inputs(std::index_sequence<I...>, double p, const Tensor& out, const std::vector<Tensor>& in) {
  using P = ParamsOf<Op, T>;
  Loops::template map<T, std::tuple_element_t<I, P>...>(F<Op, T, std::tuple_element_t<I, P>...>{{p}}, out, {in[I]...});
}

// The reduce_grad_kernel<Op> of ops/reduce.h for the backend whose loops are Loops.
template <class Op, class Loops> void reduce_grad(const Tensor& out, const std::vector<Tensor>& in, double p) {
  dispatch_floating(out.dtype(), Op::name, [&](auto tag) {
    using T = typename decltype(tag)::type;
    map_inputs<Op, Loops, T>(std::make_index_sequence<arity<Op, T>>{}, p, out, in);
  });
}

// Registers the kernels of every piece of ReduceGradOps as `device`'s.
template <class Loops> bool register_reduce_grad_kernels(DeviceType device) {
  for_each_op<ReduceGradOps>([&]<class Op>() { reduce_grad_kernel<Op>.set(device, reduce_grad<Op, Loops>); });
  return true;
}

}  // namespace ks::reduce_grad_kernels
