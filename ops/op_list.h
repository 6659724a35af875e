// ops/op_list.h — type lists of op descriptors, for the elementwise families
// (unary_formulas.h, elementwise_formulas.h, compare_formulas.h).
//
// A family's ops are one list, e.g. `using UnaryOps = OpList<Neg, Exp, ...>`.
// Everything that must cover every op walks that list instead of naming ops:
// each backend registers its kernels with for_each_op, and the family's tests
// keep a table keyed by the list, checked at compile time with `covers` (as
// ggml's static_assert(GGML_OP_COUNT == ...) catches a missed entry).
// OpInfo carries one descriptor's facts to the non-template code.
// Not here: the descriptors themselves, kernels, autograd.
#pragma once

#include <cstddef>
#include <type_traits>

#include "core/dispatch.h"

namespace ks {

// What an op's backward reads: its input(s), its output, or (Self, for a
// linear op) nothing: the backward is the op itself applied to the gradient.
// Activation: the input, but where linear would save its input in bf16
// (ops/linalg.h's saves_input_in_bf16) rounded to bf16, as PyTorch's autocast
// runs a feed-forward layer's activation on the bf16 output of its linear.
enum class Saves { Input, Output, Self, Activation };

// What a family's template front (unary<Op>, binary<Op>) hands to the
// family's one non-template forward: the descriptor's facts and its kernel tables.
template <class Kernel, class BackwardKernel> struct OpInfo {
  const char* name;
  const char* node;
  bool integers;
  Saves saves;
  const KernelTable<Kernel>& forward;
  const KernelTable<BackwardKernel>& backward;
};

template <class... Ops> struct OpList { static constexpr std::size_t size = sizeof...(Ops); };

// f.template operator()<Op>() for every Op of List, in order.
template <class... Ops, class F> constexpr void for_each_op_in(OpList<Ops...>*, F& f) {
  (f.template operator()<Ops>(), ...);
}
template <class List, class F> constexpr void for_each_op(F&& f) { for_each_op_in(static_cast<List*>(nullptr), f); }

// The two lists one after the other.
template <class A, class B> struct ConcatOps;
template <class... A, class... B> struct ConcatOps<OpList<A...>, OpList<B...>> { using type = OpList<A..., B...>; };

// Whether Op is in List.
template <class Op, class List> inline constexpr bool has_op = false;
template <class Op, class... Ops> inline constexpr bool has_op<Op, OpList<Ops...>> = (std::is_same_v<Op, Ops> || ...);

// Whether every op of List has an entry in Table, a std::tuple (or any
// template) of entry types that name their op as `op_type`: a test table holds one
// or more rows per op, and a row forgotten for a new op fails a static_assert.
template <class List, class Table> inline constexpr bool covers = false;
template <class... Ops, template <class...> class Table, class... Entries>
inline constexpr bool covers<OpList<Ops...>, Table<Entries...>> = (has_op<Ops, OpList<typename Entries::op_type...>> &&
                                                                   ...);

}  // namespace ks
