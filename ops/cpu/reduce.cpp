// ops/cpu/reduce.cpp — CPU reduction kernels: one Reducer (combine
// function) per op family, all run by the skeleton in reduce_loops.h.
//
// float32/float64 accumulate in double, integers and bools in int64 (wrapping
// like two's complement, as PyTorch). Contiguous runs of additive reductions
// use 16 independent partial sums: vectorised, and a shorter error chain.
// var/stddev and logsumexp take two passes (mean or max first, then the
// centred sum); the first pass's results stay in a double buffer.
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "ops/cpu/reduce_loops.h"
#include "ops/reduce.h"

namespace ks::cpu {
namespace {

// The accumulation type of T.
template <class T>
using Wide = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;

// a + b, wrapping for integers (signed overflow would be undefined).
template <class A>
inline A wrap_add(A a, A b) {
  if constexpr (std::is_integral_v<A>) return A(uint64_t(a) + uint64_t(b));
  else return a + b;
}
template <class A>
inline A wrap_mul(A a, A b) {
  if constexpr (std::is_integral_v<A>) return A(uint64_t(a) * uint64_t(b));
  else return a * b;
}

// Σ f(p[j]) over a contiguous run, in 16 lanes combined pairwise.
template <class A, class T, class F>
inline A lane_sum(const T* p, int64_t n, F f) {
  constexpr int L = 16;
  A acc[L] = {};
  int64_t j = 0;
  for (; j + L <= n; j += L)
    for (int k = 0; k < L; ++k) acc[k] = wrap_add(acc[k], f(p[j + k]));
  for (int w = L / 2; w >= 1; w /= 2)
    for (int k = 0; k < w; ++k) acc[k] = wrap_add(acc[k], acc[k + w]);
  for (; j < n; ++j) acc[0] = wrap_add(acc[0], f(p[j]));
  return acc[0];
}

// out = fin(Σ f(x), n): sum, mean, the finite p-norms.
template <class T, class Out, class F, class Fin>
struct MapSum {
  using Acc = Wide<T>;
  Out* out;
  F f;
  Fin fin;
  Acc init(int64_t) const { return 0; }
  void step(Acc& a, T x, int64_t) const { a = wrap_add(a, f(x)); }
  void run(Acc& a, const T* p, int64_t n, int64_t) const { a = wrap_add(a, lane_sum<Acc>(p, n, f)); }
  void merge(Acc& a, const Acc& b) const { a = wrap_add(a, b); }
  void finish(int64_t m, const Acc& a, int64_t n) const { out[m] = Out(fin(a, n)); }
};
template <class T, class Out, class F, class Fin>
MapSum<T, Out, F, Fin> map_sum(Out* out, F f, Fin fin) { return {out, f, fin}; }

// Π x; with `zeros`, the product of the nonzero elements and the zero count.
template <class T, class Out>
struct Product {
  struct Acc {
    Wide<T> p = 1;
    int64_t zeros = 0;
  };
  Out* out;
  int64_t* zeros;
  Acc init(int64_t) const { return {}; }
  void step(Acc& a, T x, int64_t) const {
    if (zeros && x == T(0)) ++a.zeros;
    else a.p = wrap_mul(a.p, Wide<T>(x));
  }
  void merge(Acc& a, const Acc& b) const {
    a.p = wrap_mul(a.p, b.p);
    a.zeros += b.zeros;
  }
  void finish(int64_t m, const Acc& a, int64_t) const {
    out[m] = Out(a.p);
    if (zeros) zeros[m] = a.zeros;
  }
};

template <class T>
inline bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>) return std::isnan(v);
  else return false;
}

struct Identity {
  template <class X>
  X operator()(X x) const { return x; }
};

// The extreme of p[0, n), a NaN winning, over two 256-bit vectors of lanes
// (GCC/Clang vector extensions: branch-free, vectorised for every T), in
// which a NaN sticks once taken.
template <bool kMax, class T>
T lane_extreme(const T* p, int64_t n) {
  constexpr int W = 32 / sizeof(T);
  typedef T Vec __attribute__((vector_size(32)));
  Vec best[2];
  for (int u = 0; u < 2; ++u)
    for (int k = 0; k < W; ++k) best[u][k] = p[0];
  int64_t j = 0;
  for (; j + 2 * W <= n; j += 2 * W)
    for (int u = 0; u < 2; ++u) {
      Vec v;
      std::memcpy(&v, p + j + u * W, sizeof v);
      best[u] = ((kMax ? v > best[u] : v < best[u]) | (v != v)) ? v : best[u];
    }
  T b = p[0];
  auto fold = [&b](T v) { b = ((kMax ? v > b : v < b) || v != v) ? v : b; };
  for (int u = 0; u < 2; ++u)
    for (int k = 0; k < W; ++k) fold(best[u][k]);
  for (; j < n; ++j) fold(p[j]);
  return b;
}

// The largest (or smallest) f(x) and its first index; a NaN wins at once.
// An empty reduction (only logsumexp's first pass and norm ±inf allow one)
// gives `empty`.
template <class T, class Out, bool kMax, class F>
struct Extreme {
  using V = decltype(std::declval<F>()(T()));
  struct Acc {
    V v{};
    int64_t j = -1;  // -1: nothing seen yet
  };
  Out* out;
  int64_t* index;  // may be null
  F f;
  double empty;
  static bool better(V x, V cur) {
    if (is_nan(cur)) return false;
    if (is_nan(x)) return true;
    return kMax ? x > cur : x < cur;
  }
  Acc init(int64_t) const { return {}; }
  void step(Acc& a, T x, int64_t j) const {
    V v = f(x);
    if (a.j < 0 || better(v, a.v)) a = {v, j};
  }
  void merge(Acc& a, const Acc& b) const {
    if (b.j >= 0 && (a.j < 0 || better(b.v, a.v))) a = b;
  }
  // Contiguous runs of the plain values: the extreme by vector lanes, then,
  // if an index is wanted, a scan for its first occurrence.
  void run(Acc& a, const T* p, int64_t n, int64_t j0) const
    requires std::is_same_v<F, Identity>
  {
    if (n == 0) return;
    const V b = lane_extreme<kMax>(p, n);
    if (!index) {
      merge(a, Acc{b, j0});
      return;
    }
    const bool any_nan = is_nan(b);
    int64_t first = 0;
    while (any_nan ? !is_nan(f(p[first])) : !(f(p[first]) == b)) ++first;
    merge(a, Acc{f(p[first]), j0 + first});
  }
  void finish(int64_t m, const Acc& a, int64_t) const {
    if constexpr (std::is_floating_point_v<Out>) out[m] = a.j < 0 ? Out(empty) : Out(a.v);
    else out[m] = Out(a.v);
    if (index) index[m] = a.j;
  }
};
template <class T, bool kMax, class Out, class F>
Extreme<T, Out, kMax, F> extreme(Out* out, int64_t* index, F f, double empty = -INFINITY) {
  return {out, index, f, empty};
}

// Second pass of var/stddev: Σ (x - c) and Σ (x - c)² around the mean c, so
// M2 = Σd² - (Σd)²/n is exact even if c is slightly off.
template <class T>
struct Centered2 {
  struct Acc {
    double c = 0, s1 = 0, s2 = 0;
  };
  T* out;
  const double* centre;
  double correction;
  bool take_sqrt;
  Acc init(int64_t m) const { return {centre[m], 0, 0}; }
  void step(Acc& a, T x, int64_t) const {
    double d = double(x) - a.c;
    a.s1 += d;
    a.s2 += d * d;
  }
  void run(Acc& a, const T* p, int64_t n, int64_t) const {
    constexpr int L = 8;
    double s1[L] = {}, s2[L] = {};
    const double c = a.c;
    int64_t j = 0;
    for (; j + L <= n; j += L)
      for (int k = 0; k < L; ++k) {
        double d = double(p[j + k]) - c;
        s1[k] += d;
        s2[k] += d * d;
      }
    for (int w = L / 2; w >= 1; w /= 2)
      for (int k = 0; k < w; ++k) {
        s1[k] += s1[k + w];
        s2[k] += s2[k + w];
      }
    a.s1 += s1[0];
    a.s2 += s2[0];
    for (; j < n; ++j) step(a, p[j], 0);
  }
  void merge(Acc& a, const Acc& b) const {
    a.s1 += b.s1;
    a.s2 += b.s2;
  }
  void finish(int64_t m, const Acc& a, int64_t n) const {
    double m2 = std::max(0.0, a.s2 - (n > 0 ? a.s1 * a.s1 / double(n) : 0.0));
    double v = m2 / std::max(0.0, double(n) - correction);
    out[m] = T(take_sqrt ? std::sqrt(v) : v);
  }
};

// Second pass of logsumexp: c + log Σ exp(x - c) around the max c. The
// exponentials are taken in T (each term's rounding stays below T's
// precision), summed in double.
template <class T>
struct CenteredExp {
  struct Acc {
    double c = 0, s = 0;
  };
  T* out;
  const double* centre;
  Acc init(int64_t m) const { return {centre[m], 0}; }
  void step(Acc& a, T x, int64_t) const { a.s += std::exp(x - T(a.c)); }
  void run(Acc& a, const T* p, int64_t n, int64_t) const {
    if (!std::isfinite(a.c)) return;  // the result is c itself
    const T c = T(a.c);  // a max of T values: exact in T
    a.s += lane_sum<double>(p, n, [c](T x) { return double(std::exp(x - c)); });
  }
  void merge(Acc& a, const Acc& b) const { a.s += b.s; }
  void finish(int64_t m, const Acc& a, int64_t) const {
    // NaN, +inf, and -inf (all -inf or empty: not -inf - -inf = NaN) pass through.
    out[m] = T(std::isfinite(a.c) ? a.c + std::log(a.s) : a.c);
  }
};


template <class T>
void norm_cpu(const ReduceGeometry& g, T* out, double p) {
  auto abs_ = [](T x) { return std::fabs(x); };
  auto as_is = [](double a, int64_t) { return a; };
  if (p == INFINITY) reduce_with<T>(g, extreme<T, true>(out, nullptr, abs_, 0.0));
  else if (p == -INFINITY) reduce_with<T>(g, extreme<T, false>(out, nullptr, abs_, INFINITY));
  else if (p == 0) reduce_with<T>(g, map_sum<T>(out, [](T x) { return double(x != T(0)); }, as_is));
  else if (p == 1) reduce_with<T>(g, map_sum<T>(out, [](T x) { return double(std::fabs(x)); }, as_is));
  else if (p == 2)
    reduce_with<T>(g, map_sum<T>(out, [](T x) { return double(x) * double(x); },
                                 [](double a, int64_t) { return std::sqrt(a); }));
  else
    reduce_with<T>(g, map_sum<T>(out, [p](T x) { return std::pow(std::fabs(double(x)), p); },
                                 [p](double a, int64_t) { return std::pow(a, 1.0 / p); }));
}

void reduce_cpu(ReduceOp op, const Tensor& out, const Tensor& indices, const Tensor& x,
                const std::vector<bool>& mask, const ReduceParams& params) {
  const ReduceGeometry g = reduce_geometry(x, mask);
  int64_t* idx = indices.defined() ? indices.data<int64_t>() : nullptr;
  switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::Prod:
    case ReduceOp::ProdNonzero:
      dispatch_all(x.dtype(), op == ReduceOp::Sum ? "sum" : "prod", [&](auto tag) {
        using T = typename decltype(tag)::type;
        using Out = std::conditional_t<std::is_floating_point_v<T>, T, int64_t>;
        Out* o = out.data<Out>();
        if (op == ReduceOp::Sum)
          reduce_with<T>(g, map_sum<T>(o, [](T v) { return Wide<T>(v); }, [](Wide<T> a, int64_t) { return a; }));
        else reduce_with<T>(g, Product<T, Out>{o, op == ReduceOp::ProdNonzero ? idx : nullptr});
      });
      break;
    case ReduceOp::Max:
    case ReduceOp::Min:
    case ReduceOp::ArgMax:
    case ReduceOp::ArgMin:
      dispatch_numeric(x.dtype(), "max/min", [&](auto tag) {
        using T = typename decltype(tag)::type;
        T* o = out.data<T>();
        if (op == ReduceOp::Max || op == ReduceOp::ArgMax) reduce_with<T>(g, extreme<T, true>(o, idx, Identity{}));
        else reduce_with<T>(g, extreme<T, false>(o, idx, Identity{}));
      });
      break;
    case ReduceOp::Mean:
    case ReduceOp::Var:
    case ReduceOp::Std:
    case ReduceOp::LogSumExp:
    case ReduceOp::Norm:
      dispatch_floating(x.dtype(), "reduce", [&](auto tag) {
        using T = typename decltype(tag)::type;
        T* o = out.data<T>();
        auto mean_of = [](double a, int64_t n) { return a / double(n); };
        auto as_double = [](T v) { return double(v); };
        if (op == ReduceOp::Mean) {
          reduce_with<T>(g, map_sum<T>(o, as_double, mean_of));
        } else if (op == ReduceOp::Norm) {
          norm_cpu<T>(g, o, params.p);
        } else {
          std::vector<double> centre(size_t(g.M));
          if (op == ReduceOp::LogSumExp) {
            reduce_with<T>(g, extreme<T, true>(centre.data(), nullptr, Identity{}));
            reduce_with<T>(g, CenteredExp<T>{o, centre.data()});
          } else {
            reduce_with<T>(g, map_sum<T>(centre.data(), as_double, mean_of));
            reduce_with<T>(g, Centered2<T>{o, centre.data(), params.correction, op == ReduceOp::Std});
          }
        }
      });
      break;
  }
}

}  // namespace
KS_REGISTER_KERNEL(reduce_kernel, CPU, reduce_cpu);
}  // namespace ks::cpu
