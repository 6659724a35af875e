// ops/cpu/reduce.cpp — CPU reduction kernels: the reducers of
// ops/reduce_formulas.h run by the skeleton in reduce_loops.h, with the
// contiguous fast paths that only the CPU has; and the registration of the
// backwards' elementwise pieces (ops/reduce_grad_kernels.h, run by cpu_map).
//
// A contiguous run of an additive reduction is folded in 16 independent
// partial sums (vectorised, and a shorter error chain); max/min by vector
// lanes. The lanes are merged in a fixed order, so results stay independent
// of the thread count. Not here: the formulas themselves (reduce_formulas.h),
// the loops and chunking (reduce_loops.h).
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include "ops/cpu/loops.h"
#include "ops/cpu/reduce_loops.h"
#include "ops/reduce.h"
#include "ops/reduce_formulas.h"
#include "ops/reduce_grad_kernels.h"

namespace ks::cpu {
namespace {

using namespace reduce_formulas;

// Σ f(p[j]) over a contiguous run, in 16 lanes combined pairwise.
template <class A, class T, class F> inline A lane_sum(const T* p, int64_t n, F f) {
  constexpr int L = 16;
  A acc[L] = {};
  int64_t j = 0;
  for (; j + L <= n; j += L)
    for (int k = 0; k < L; ++k) acc[k] = wrap_add(acc[k], A(f(p[j + k])));
  for (int w = L / 2; w >= 1; w /= 2)
    for (int k = 0; k < w; ++k) acc[k] = wrap_add(acc[k], acc[k + w]);
  for (; j < n; ++j) acc[0] = wrap_add(acc[0], A(f(p[j])));
  return acc[0];
}

// The extreme of p[0, n), a NaN winning, over two 256-bit vectors of lanes
// (GCC/Clang vector extensions: branch-free, vectorised for every T), in
// which a NaN sticks once taken.
template <bool kMax, class T> T lane_extreme(const T* p, int64_t n) {
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

// Each reducer with a contiguous fast path `run(Acc&, const T* p, int64_t n,
// int64_t j0)` (reduce_loops.h) is the shared one plus that member.
template <class T, class Out, class F, class Fin> struct LaneMapSum : MapSum<T, Out, F, Fin> {
  using Acc = typename MapSum<T, Out, F, Fin>::Acc;
  void run(Acc& a, const T* p, int64_t n, int64_t) const { a = wrap_add(a, lane_sum<Acc>(p, n, this->f)); }
};

// max/min of the plain values: the extreme by vector lanes, then, if an index
// is wanted, a scan for its first occurrence.
template <class T, class Out, bool kMax> struct LaneExtreme : Extreme<T, Out, kMax, Identity> {
  using Acc = typename Extreme<T, Out, kMax, Identity>::Acc;
  void run(Acc& a, const T* p, int64_t n, int64_t j0) const {
    if (n == 0) return;
    const T b = lane_extreme<kMax>(p, n);
    if (!this->index) {
      this->merge(a, Acc{b, j0});
      return;
    }
    const bool any_nan = is_nan(b);
    int64_t first = 0;
    while (any_nan ? !is_nan(p[first]) : !(p[first] == b)) ++first;
    this->merge(a, Acc{p[first], j0 + first});
  }
};

template <class T> struct LaneCentered2 : Centered2<T> {
  using Acc = typename Centered2<T>::Acc;
  void run(Acc& a, const T* p, int64_t n, int64_t) const {
    constexpr int L = 8;
    double s1[L] = {}, s2[L] = {};
    const double c = a.c;
    int64_t j = 0;
    for (; j + L <= n; j += L)
      for (int k = 0; k < L; ++k) Centered2<T>::add(s1[k], s2[k], double(p[j + k]) - c);
    for (int w = L / 2; w >= 1; w /= 2)
      for (int k = 0; k < w; ++k) {
        s1[k] += s1[k + w];
        s2[k] += s2[k + w];
      }
    a.s1 += s1[0];
    a.s2 += s2[0];
    for (; j < n; ++j) this->step(a, p[j], 0);
  }
};

template <class T> struct LaneCenteredExp : CenteredExp<T> {
  using Acc = typename CenteredExp<T>::Acc;
  void run(Acc& a, const T* p, int64_t n, int64_t) const {
    if (!is_finite(a.c)) return;  // the result is c itself
    const T c = T(a.c);
    a.s += lane_sum<double>(p, n, [c](T x) { return CenteredExp<T>::term(x, c); });
  }
};

// The reducer with its fast path where it has one (the most specialised
// overload wins), else as it is.
template <class R> const R& with_lanes(const R& r) { return r; }
template <class T, class Out, class F, class Fin>
LaneMapSum<T, Out, F, Fin> with_lanes(const MapSum<T, Out, F, Fin>& r) {
  return {r};
}
template <class T, class Out, bool kMax>
LaneExtreme<T, Out, kMax> with_lanes(const Extreme<T, Out, kMax, Identity>& r) {
  return {r};
}
template <class T> LaneCentered2<T> with_lanes(const Centered2<T>& r) { return {r}; }
template <class T> LaneCenteredExp<T> with_lanes(const CenteredExp<T>& r) { return {r}; }

void reduce_cpu(ReduceOp op, const Tensor& out, const Tensor& indices, const Tensor& x, const std::vector<bool>& mask,
                const ReduceParams& params) {
  const ReduceGeometry g = reduce_geometry(x, mask);
  int64_t* idx = indices.defined() ? indices.data<int64_t>() : nullptr;
  std::vector<double> centre(two_pass(op) ? size_t(g.M) : 0);
  with_reducers</*Take16=*/true>(op, params, x.dtype(), out, idx, centre.data(), [&](auto tag, const auto& r) {
    reduce_with<typename decltype(tag)::type>(g, with_lanes(r));
  });
}

}  // namespace
KS_REGISTER_KERNEL(reduce_kernel, CPU, reduce_cpu);
[[maybe_unused]] const bool reduce_grad_kernels_registered =
    reduce_grad_kernels::register_reduce_grad_kernels<CpuLoops>(DeviceType::CPU);
}  // namespace ks::cpu
