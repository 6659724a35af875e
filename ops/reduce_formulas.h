// ops/reduce_formulas.h — the math of the reductions, written once for the
// CPU and the CUDA kernels.
//
// A reducer is the per-output math of one ReduceOp, in the protocol that both
// backends' loops run (ops/cpu/reduce_loops.h, ops/cuda/reduce.cu):
//   using Acc = ...;                          // the running state of one output
//   Acc init(int64_t m) const;                // m: row-major index of the output
//   void step(Acc&, T x, int64_t j) const;    // j: row-major index within the reduced dims
//   void merge(Acc& a, const Acc& b) const;   // a, b: states of disjoint index sets
//   void finish(int64_t m, const Acc&, int64_t n) const;  // writes output m
// Every member is KS_HOST_DEVICE, so the same object is run by the CPU's loops
// and copied into a CUDA kernel's parameters. with_reducers turns a run-time
// ReduceOp into its reducers and hands each to the backend's loop:
//
//   with_reducers(op, params, x.dtype(), out, idx, centre,
//                 [&](auto tag, const auto& r) { reduce_with<typename decltype(tag)::type>(g, r); });
//
// float32/float64 accumulate in double, integers and bools in int64, wrapping
// like two's complement (as PyTorch). Math functions are ks::kmath's
// (ops/kernel_math.h), except exp: see libm_exp. The backwards' elementwise
// pieces are descriptors of their own (reduce_grad_formulas.h).
// Not here: loops, chunking, thread or block structure, and the CPU's
// contiguous fast paths (lane sums, ops/cpu/reduce.cpp): those are per backend.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "core/error.h"
#include "ops/kernel_dtypes.h"
#include "ops/kernel_math.h"
#include "ops/reduce.h"

namespace ks::reduce_formulas {

// The accumulation type of T (bfloat16 and float16 accumulate in double, as float32 does).
template <class T> using Wide = std::conditional_t<std::is_floating_point_v<T> || is_16bit_v<T>, double, int64_t>;

// a + b and a · b, wrapping for integers (signed overflow would be undefined).
template <class A> KS_HOST_DEVICE inline A wrap_add(A a, A b) {
  if constexpr (std::is_integral_v<A>)
    return A(uint64_t(a) + uint64_t(b));
  else
    return a + b;
}
template <class A> KS_HOST_DEVICE inline A wrap_mul(A a, A b) {
  if constexpr (std::is_integral_v<A>)
    return A(uint64_t(a) * uint64_t(b));
  else
    return a * b;
}

// std::isnan on the host: GCC compiles it to one unordered compare, where
// v != v costs the CPU's max/min column loop a second branch.
template <class T> KS_HOST_DEVICE inline bool is_nan(T v) {
  if constexpr (!std::is_floating_point_v<T>) return false;
#if defined(__CUDA_ARCH__)
  else
    return v != v;
#else
  else
    return std::isnan(v);
#endif
}

KS_HOST_DEVICE inline bool is_finite(double v) { return !is_nan(v) && v != INFINITY && v != -INFINITY; }

// max(0, v) that lets a NaN through (a NaN input must give a NaN variance).
KS_HOST_DEVICE inline double clamp_below_zero(double v) { return is_nan(v) || 0.0 < v ? v : 0.0; }

// libm's exp in T on both sides (CUDA's expf/exp on the device). Not
// kmath::exp, whose float32 CPU version (vec_math.h) rounds differently:
// logsumexp and its gradient keep the results they had.
KS_HOST_DEVICE inline float libm_exp(float x) { return ::expf(x); }
KS_HOST_DEVICE inline double libm_exp(double x) { return ::exp(x); }

// --- what one element contributes (T x -> Wide or double) ---
template <class T> struct ToWide {
  KS_HOST_DEVICE Wide<T> operator()(T v) const { return Wide<T>(widen(v)); }
};
struct AsDouble {
  template <class T> KS_HOST_DEVICE double operator()(T v) const { return double(widen(v)); }
};
struct Square {  // norm 2
  template <class T> KS_HOST_DEVICE double operator()(T v) const { return double(v) * double(v); }
};
struct AbsValue {  // norm 1
  template <class T> KS_HOST_DEVICE double operator()(T v) const { return double(kmath::fabs(v)); }
};
struct NonZero {  // norm 0
  template <class T> KS_HOST_DEVICE double operator()(T v) const { return double(v != T(0)); }
};
struct AbsPow {  // any other finite norm
  double p;
  template <class T> KS_HOST_DEVICE double operator()(T v) const { return kmath::pow(kmath::fabs(double(v)), p); }
};
struct Identity {  // max/min
  template <class X> KS_HOST_DEVICE X operator()(X x) const { return x; }
};
struct Magnitude {  // norm ±inf, in T
  template <class X> KS_HOST_DEVICE X operator()(X x) const { return kmath::fabs(x); }
};

// --- how a sum becomes the output (Σ, n) ---
struct AsIs {
  template <class A> KS_HOST_DEVICE A operator()(A a, int64_t) const { return a; }
};
struct MeanOf {
  KS_HOST_DEVICE double operator()(double a, int64_t n) const { return a / double(n); }
};
struct SqrtOf {
  KS_HOST_DEVICE double operator()(double a, int64_t) const { return kmath::sqrt(a); }
};
struct RootOf {
  double p;
  KS_HOST_DEVICE double operator()(double a, int64_t) const { return kmath::pow(a, 1.0 / p); }
};

// out = fin(Σ f(x), n): sum, mean, the finite p-norms.
template <class T, class Out, class F, class Fin> struct MapSum {
  using Acc = Wide<T>;
  Out* out;
  F f;
  Fin fin;
  KS_HOST_DEVICE Acc init(int64_t) const { return Acc(0); }
  KS_HOST_DEVICE void step(Acc& a, T x, int64_t) const { a = wrap_add(a, Acc(f(x))); }
  KS_HOST_DEVICE void merge(Acc& a, const Acc& b) const { a = wrap_add(a, b); }
  KS_HOST_DEVICE void finish(int64_t m, const Acc& a, int64_t n) const { out[m] = Out(fin(a, n)); }
};
template <class T, class Out, class F, class Fin> MapSum<T, Out, F, Fin> map_sum(Out* out, F f, Fin fin) {
  return {out, f, fin};
}

// Π x; with `zeros`, the product of the nonzero elements and the zero count.
template <class T, class Out> struct Product {
  struct Acc {
    Wide<T> p;
    int64_t zeros;
  };
  Out* out;
  int64_t* zeros;
  KS_HOST_DEVICE Acc init(int64_t) const { return {Wide<T>(1), 0}; }
  KS_HOST_DEVICE void step(Acc& a, T x, int64_t) const {
    if (zeros && x == T(0))
      ++a.zeros;
    else
      a.p = wrap_mul(a.p, Wide<T>(x));
  }
  KS_HOST_DEVICE void merge(Acc& a, const Acc& b) const {
    a.p = wrap_mul(a.p, b.p);
    a.zeros += b.zeros;
  }
  KS_HOST_DEVICE void finish(int64_t m, const Acc& a, int64_t) const {
    out[m] = Out(a.p);
    if (zeros) zeros[m] = a.zeros;
  }
};

// The largest (or smallest) f(x) and its first index; a NaN wins, the first
// NaN among several. An empty reduction (only logsumexp's first pass and norm
// ±inf allow one) gives `empty`.
template <class T, class Out, bool kMax, class F> struct Extreme {
  using V = decltype(std::declval<F>()(T()));
  struct Acc {
    V v;
    int64_t j;  // -1: nothing seen yet
  };
  Out* out;
  int64_t* index;  // may be null
  F f;
  double empty;
  KS_HOST_DEVICE static bool better(V x, V cur) {
    if (is_nan(cur)) return false;
    if (is_nan(x)) return true;
    return kMax ? x > cur : x < cur;
  }
  KS_HOST_DEVICE Acc init(int64_t) const { return {V(0), -1}; }
  // Steps of one state come in increasing j, so the first of equals stays.
  KS_HOST_DEVICE void step(Acc& a, T x, int64_t j) const {
    const V v = f(x);
    if (a.j < 0 || better(v, a.v)) a = {v, j};
  }
  // b may cover indices before a's (a CUDA block merges its threads' states
  // in a tree), so equals go to the smaller index.
  KS_HOST_DEVICE void merge(Acc& a, const Acc& b) const {
    if (b.j < 0) return;
    if (a.j < 0 || better(b.v, a.v)) {
      a = b;
      return;
    }
    const bool same = is_nan(a.v) ? is_nan(b.v) : (!better(a.v, b.v) && !is_nan(b.v));
    if (same && b.j < a.j) a = b;
  }
  KS_HOST_DEVICE void finish(int64_t m, const Acc& a, int64_t) const {
    if constexpr (std::is_floating_point_v<Out>)
      out[m] = a.j < 0 ? Out(empty) : Out(a.v);
    else
      out[m] = Out(a.v);
    if (index) index[m] = a.j;
  }
};
template <class T, bool kMax, class Out, class F>
Extreme<T, Out, kMax, F> extreme(Out* out, int64_t* index, F f, double empty = -INFINITY) {
  return {out, index, f, empty};
}

// Second pass of var/stddev: Σ (x - c) and Σ (x - c)² around the mean c, so
// M2 = Σd² - (Σd)²/n is exact even if c is slightly off.
template <class T> struct Centered2 {
  struct Acc {
    double c, s1, s2;
  };
  T* out;
  const double* centre;
  double correction;
  bool take_sqrt;
  // d = x - c into the two sums (also the CPU's lanes, ops/cpu/reduce.cpp).
  KS_HOST_DEVICE static void add(double& s1, double& s2, double d) {
    s1 += d;
    s2 += d * d;
  }
  KS_HOST_DEVICE Acc init(int64_t m) const { return {centre[m], 0, 0}; }
  KS_HOST_DEVICE void step(Acc& a, T x, int64_t) const { add(a.s1, a.s2, double(x) - a.c); }
  KS_HOST_DEVICE void merge(Acc& a, const Acc& b) const {
    a.s1 += b.s1;
    a.s2 += b.s2;
  }
  KS_HOST_DEVICE void finish(int64_t m, const Acc& a, int64_t n) const {
    const double m2 = clamp_below_zero(a.s2 - (n > 0 ? a.s1 * a.s1 / double(n) : 0.0));
    const double den = double(n) - correction;
    const double v = m2 / (0.0 < den ? den : 0.0);  // n - correction <= 0: 0/0 or inf (reduce.h)
    out[m] = T(take_sqrt ? kmath::sqrt(v) : v);
  }
};

// Second pass of logsumexp: c + log Σ exp(x - c) around the max c. The
// exponentials are taken in T (each term's rounding stays below T's
// precision), summed in double.
template <class T> struct CenteredExp {
  struct Acc {
    double c, s;
  };
  T* out;
  const double* centre;
  // One term; c is a max of T values, exact in T.
  KS_HOST_DEVICE static double term(T x, T c) { return double(libm_exp(T(x - c))); }
  KS_HOST_DEVICE Acc init(int64_t m) const { return {centre[m], 0}; }
  // A non-finite c makes the terms NaN or 0, which finish ignores.
  KS_HOST_DEVICE void step(Acc& a, T x, int64_t) const { a.s += term(x, T(a.c)); }
  KS_HOST_DEVICE void merge(Acc& a, const Acc& b) const { a.s += b.s; }
  KS_HOST_DEVICE void finish(int64_t m, const Acc& a, int64_t) const {
    // NaN, +inf, and -inf (all -inf or empty: not -inf - -inf = NaN) pass through.
    out[m] = T(is_finite(a.c) ? a.c + kmath::log(a.s) : a.c);
  }
};

// Whether op takes two passes, the first writing one double per output into
// `centre`: the mean (var, stddev) or the max (logsumexp).
inline bool two_pass(ReduceOp op) { return op == ReduceOp::Var || op == ReduceOp::Std || op == ReduceOp::LogSumExp; }

// Calls run(TypeTag<T>{}, r) for each pass of op, in order, with T x's
// element type and r the pass's reducer. out, idx (ArgMax, ArgMin,
// ProdNonzero, else null) and centre (M doubles when two_pass(op), else null)
// are pointers on the kernel's device.
// Take16: the backend's kernels read bfloat16 and float16 (sum and mean only).
template <bool Take16 = false, class Run>
void with_reducers(ReduceOp op, const ReduceParams& params, DType dtype, const Tensor& out, int64_t* idx,
                   double* centre, Run&& run) {
  switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::Prod:
    case ReduceOp::ProdNonzero:
      if constexpr (Take16) {  // a 16-bit sum: accumulated in double, stored in the input's dtype
        if (op == ReduceOp::Sum && is_16bit(dtype))
          return dispatch_floating16(dtype, "sum", [&](auto tag) {
            using T = typename decltype(tag)::type;
            if constexpr (is_16bit_v<T>) run(tag, map_sum<T>(out.data<T>(), ToWide<T>{}, AsIs{}));
          });
      }
      return dispatch_all(dtype, op == ReduceOp::Sum ? "sum" : "prod", [&](auto tag) {
        using T = typename decltype(tag)::type;
        using Out = std::conditional_t<std::is_floating_point_v<T>, T, int64_t>;
        Out* o = out.data<Out>();
        if (op == ReduceOp::Sum)
          run(tag, map_sum<T>(o, ToWide<T>{}, AsIs{}));
        else
          run(tag, Product<T, Out>{o, op == ReduceOp::ProdNonzero ? idx : nullptr});
      });
    case ReduceOp::Max:
    case ReduceOp::Min:
    case ReduceOp::ArgMax:
    case ReduceOp::ArgMin:
      return dispatch_numeric(dtype, "max/min", [&](auto tag) {
        using T = typename decltype(tag)::type;
        T* o = out.data<T>();
        if (op == ReduceOp::Max || op == ReduceOp::ArgMax)
          run(tag, extreme<T, true>(o, idx, Identity{}));
        else
          run(tag, extreme<T, false>(o, idx, Identity{}));
      });
    case ReduceOp::Mean:
    case ReduceOp::Var:
    case ReduceOp::Std:
    case ReduceOp::LogSumExp:
    case ReduceOp::Norm:
      if constexpr (Take16) {  // a 16-bit mean, as the sum
        if (op == ReduceOp::Mean && is_16bit(dtype))
          return dispatch_floating16(dtype, "mean", [&](auto tag) {
            using T = typename decltype(tag)::type;
            if constexpr (is_16bit_v<T>) run(tag, map_sum<T>(out.data<T>(), AsDouble{}, MeanOf{}));
          });
      }
      return dispatch_floating(dtype, "reduce", [&](auto tag) {
        using T = typename decltype(tag)::type;
        T* o = out.data<T>();
        const double p = params.p;
        if (op == ReduceOp::Mean) {
          run(tag, map_sum<T>(o, AsDouble{}, MeanOf{}));
        } else if (op == ReduceOp::LogSumExp) {
          run(tag, extreme<T, true>(centre, nullptr, Identity{}));
          run(tag, CenteredExp<T>{o, centre});
        } else if (op != ReduceOp::Norm) {
          run(tag, map_sum<T>(centre, AsDouble{}, MeanOf{}));
          run(tag, Centered2<T>{o, centre, params.correction, op == ReduceOp::Std});
        } else if (p == INFINITY) {
          run(tag, extreme<T, true>(o, nullptr, Magnitude{}, 0.0));
        } else if (p == -INFINITY) {
          run(tag, extreme<T, false>(o, nullptr, Magnitude{}, INFINITY));
        } else if (p == 0) {
          run(tag, map_sum<T>(o, NonZero{}, AsIs{}));
        } else if (p == 1) {
          run(tag, map_sum<T>(o, AbsValue{}, AsIs{}));
        } else if (p == 2) {
          run(tag, map_sum<T>(o, Square{}, SqrtOf{}));
        } else {
          run(tag, map_sum<T>(o, AbsPow{p}, RootOf{p}));
        }
      });
  }
  KS_ASSERT(false);
}

}  // namespace ks::reduce_formulas
