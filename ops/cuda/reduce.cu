// ops/cuda/reduce.cu — CUDA reduction kernels (every ReduceOp of
// ops/reduce.h) and the elementwise pieces of their backwards.
//
// The input is seen as M outputs × N reduced elements, each side a set of
// coalesced dims with x's own strides, so no layout needs a copy. One op is a
// Reducer (init / step / merge / finish, as on the CPU, here __device__),
// run by one of two kernels:
//   one block per output  — when the reduced elements are contiguous
//     (x (B, T, C) summed over C): threads stride over the row, then a tree
//     in shared memory merges their partial states;
//   one thread per output — otherwise (x (N, C) summed over N): neighbouring
//     threads read neighbouring columns, which is coalesced when a kept dim
//     is contiguous; also used when the rows are too short for a block.
// float32/float64 accumulate in double, integers and bools in int64 (wrapping),
// like the CPU. Merges do not depend on which thread saw which element (ties
// in max/min/argmax go to the smaller index, the first NaN wins), and the
// launch shape depends only on the tensor's shape, so results are
// deterministic; sums may differ from the CPU's in the last bits (another
// summation order). var/stddev and logsumexp take two passes, as on the CPU.
#include <cmath>

#include "core/cuda/loops.cuh"
#include "ops/reduce.h"

namespace ks::cuda {
namespace {

template <class T>
using Wide = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;

template <class A>
__device__ inline A wrap_add(A a, A b) {
  if constexpr (std::is_integral_v<A>) return A(uint64_t(a) + uint64_t(b));
  else return a + b;
}
template <class A>
__device__ inline A wrap_mul(A a, A b) {
  if constexpr (std::is_integral_v<A>) return A(uint64_t(a) * uint64_t(b));
  else return a * b;
}
template <class T>
__device__ inline bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>) return v != v;
  else return false;
}

// Row-major index over coalesced dims -> element offset; dims innermost first.
struct IndexMap {
  int ndim = 0;
  int64_t sizes[kMaxDims];
  int64_t strides[kMaxDims];
  __device__ int64_t offset(int64_t i) const {
    if (ndim == 1) return i * strides[0];
    int64_t off = 0;
    for (int d = 0; d < ndim; ++d) {
      const int64_t q = i / sizes[d];
      off += (i - q * sizes[d]) * strides[d];
      i = q;
    }
    return off;
  }
};

// Coalesces dims (outermost first, size-1 dims dropped) into an IndexMap.
IndexMap index_map(const Shape& sizes, const Shape& strides) {
  Shape s2, st2;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 1) continue;
    if (!s2.empty() && st2.back() == strides[d] * sizes[d]) {
      s2.back() *= sizes[d];
      st2.back() = strides[d];
    } else {
      s2.push_back(sizes[d]);
      st2.push_back(strides[d]);
    }
  }
  if (s2.empty()) {
    s2.push_back(1);
    st2.push_back(1);
  }
  KS_CHECK(int(s2.size()) <= kMaxDims, "reduce: more than ", kMaxDims, " non-mergeable dims (", sizes, ")");
  IndexMap m;
  m.ndim = int(s2.size());
  for (int d = 0; d < m.ndim; ++d) {
    m.sizes[d] = s2[size_t(m.ndim - 1 - d)];
    m.strides[d] = st2[size_t(m.ndim - 1 - d)];
  }
  return m;
}

struct Geometry {
  int64_t M = 1, N = 1;
  IndexMap kept, red;
};

Geometry geometry(const Tensor& x, const std::vector<bool>& mask) {
  Shape ks_, kst, rs, rst;
  for (int64_t d = 0; d < x.dim(); ++d) {
    (mask[size_t(d)] ? rs : ks_).push_back(x.size(d));
    (mask[size_t(d)] ? rst : kst).push_back(x.stride(d));
  }
  Geometry g;
  g.M = numel_of(ks_);
  g.N = numel_of(rs);
  g.kept = index_map(ks_, kst);
  g.red = index_map(rs, rst);
  return g;
}

template <class T, class R>
__global__ void reduce_block_kernel(const T* x, int64_t M, int64_t N, IndexMap kept, IndexMap red, R r) {
  using Acc = typename R::Acc;
  __shared__ alignas(16) unsigned char buf[kThreads * sizeof(Acc)];
  Acc* part = reinterpret_cast<Acc*>(buf);
  const int tid = int(threadIdx.x);
  for (int64_t m = blockIdx.x; m < M; m += gridDim.x) {
    const T* base = x + kept.offset(m);
    Acc a = r.init(m);
    for (int64_t j = tid; j < N; j += blockDim.x) r.step(a, base[red.offset(j)], j);
    part[tid] = a;
    __syncthreads();
    for (int s = int(blockDim.x) / 2; s > 0; s >>= 1) {
      if (tid < s) r.merge(part[tid], part[tid + s]);
      __syncthreads();
    }
    if (tid == 0) r.finish(m, part[0], N);
    __syncthreads();  // part[0] is read before the next output overwrites it
  }
}

template <class T, class R>
__global__ void reduce_thread_kernel(const T* x, int64_t M, int64_t N, IndexMap kept, IndexMap red, R r) {
  using Acc = typename R::Acc;
  for (int64_t m = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; m < M; m += int64_t(gridDim.x) * blockDim.x) {
    const T* base = x + kept.offset(m);
    Acc a = r.init(m);
    // Walk the reduced dims like an odometer: no division per element.
    int64_t idx[kMaxDims] = {};
    int64_t off = 0;
    for (int64_t j = 0; j < N; ++j) {
      r.step(a, base[off], j);
      for (int d = 0; d < red.ndim; ++d) {
        off += red.strides[d];
        if (++idx[d] < red.sizes[d]) break;
        off -= red.strides[d] * red.sizes[d];
        idx[d] = 0;
      }
    }
    r.finish(m, a, N);
  }
}

// Runs reducer r over x (element type T) as geometry g says.
template <class T, class R>
void reduce_with(const Tensor& x, const Geometry& g, const R& r) {
  if (g.M == 0) return;
  const int dev = x.device().index;
  const cudaStream_t s = stream(dev);
  DeviceGuard guard(x.device());
  const T* base = static_cast<const T*>(x.data_ptr());
  const bool rows = g.red.strides[0] == 1 && g.N >= 64;
  const bool few_outputs = g.M < int64_t(multiprocessors(dev)) * 16 && g.N >= 1024;
  if (rows || few_outputs) {
    const unsigned grid = unsigned(std::min<int64_t>(g.M, int64_t(multiprocessors(dev)) * 8));
    reduce_block_kernel<T, R><<<grid, kThreads, 0, s>>>(base, g.M, g.N, g.kept, g.red, r);
  } else {
    reduce_thread_kernel<T, R><<<grid_for(g.M, kThreads, dev), kThreads, 0, s>>>(base, g.M, g.N, g.kept, g.red, r);
  }
  KS_CUDA_LAUNCH_CHECK();
}

// --- per-element maps and finishes of the additive reductions ---
template <class T>
struct ToWide {
  __device__ Wide<T> operator()(T v) const { return Wide<T>(v); }
};
struct AsDouble {
  template <class T>
  __device__ double operator()(T v) const { return double(v); }
};
struct Square {
  template <class T>
  __device__ double operator()(T v) const { return double(v) * double(v); }
};
struct AbsValue {
  template <class T>
  __device__ double operator()(T v) const { return std::fabs(double(v)); }
};
struct NonZero {
  template <class T>
  __device__ double operator()(T v) const { return double(v != T(0)); }
};
struct AbsPow {
  double p;
  template <class T>
  __device__ double operator()(T v) const { return std::pow(std::fabs(double(v)), p); }
};
struct AsIs {
  template <class A>
  __device__ A operator()(A a, int64_t) const { return a; }
};
struct MeanOf {
  __device__ double operator()(double a, int64_t n) const { return a / double(n); }
};
struct SqrtOf {
  __device__ double operator()(double a, int64_t) const { return std::sqrt(a); }
};
struct RootOf {
  double p;
  __device__ double operator()(double a, int64_t) const { return std::pow(a, 1.0 / p); }
};

// out = fin(Σ f(x), n): sum, mean, the finite p-norms.
template <class T, class Out, class F, class Fin>
struct MapSum {
  using Acc = decltype(std::declval<F>()(T()));
  Out* out;
  F f;
  Fin fin;
  __device__ Acc init(int64_t) const { return Acc(0); }
  __device__ void step(Acc& a, T x, int64_t) const { a = wrap_add(a, f(x)); }
  __device__ void merge(Acc& a, const Acc& b) const { a = wrap_add(a, b); }
  __device__ void finish(int64_t m, const Acc& a, int64_t n) const { out[m] = Out(fin(a, n)); }
};
template <class T, class Out, class F, class Fin>
MapSum<T, Out, F, Fin> map_sum(Out* out, F f, Fin fin) {
  return {out, f, fin};
}

// Π x; with `zeros`, the product of the nonzero elements and the zero count.
template <class T, class Out>
struct Product {
  struct Acc {
    Wide<T> p;
    int64_t zeros;
  };
  Out* out;
  int64_t* zeros;
  __device__ Acc init(int64_t) const { return {Wide<T>(1), 0}; }
  __device__ void step(Acc& a, T x, int64_t) const {
    if (zeros && x == T(0)) ++a.zeros;
    else a.p = wrap_mul(a.p, Wide<T>(x));
  }
  __device__ void merge(Acc& a, const Acc& b) const {
    a.p = wrap_mul(a.p, b.p);
    a.zeros += b.zeros;
  }
  __device__ void finish(int64_t m, const Acc& a, int64_t) const {
    out[m] = Out(a.p);
    if (zeros) zeros[m] = a.zeros;
  }
};

struct Identity {
  template <class X>
  __device__ X operator()(X x) const { return x; }
};
struct Magnitude {
  template <class X>
  __device__ X operator()(X x) const { return x < X(0) ? X(-x) : x; }
};

// The largest (or smallest) f(x) and its first index; a NaN wins. An empty
// reduction gives `empty`.
template <class T, class Out, bool kMax, class F>
struct Extreme {
  using V = decltype(std::declval<F>()(T()));
  struct Acc {
    V v;
    int64_t j;  // -1: nothing seen yet
  };
  Out* out;
  int64_t* index;  // may be null
  F f;
  double empty;
  __device__ static bool better(V x, V cur) {
    if (is_nan(cur)) return false;
    if (is_nan(x)) return true;
    return kMax ? x > cur : x < cur;
  }
  __device__ Acc init(int64_t) const { return {V(0), -1}; }
  // Steps of one thread come in increasing j, so the first of equals stays.
  __device__ void step(Acc& a, T x, int64_t j) const {
    const V v = f(x);
    if (a.j < 0 || better(v, a.v)) a = {v, j};
  }
  __device__ void merge(Acc& a, const Acc& b) const {
    if (b.j < 0) return;
    if (a.j < 0 || better(b.v, a.v)) {
      a = b;
      return;
    }
    const bool same = is_nan(a.v) ? is_nan(b.v) : (!better(a.v, b.v) && !is_nan(b.v));
    if (same && b.j < a.j) a = b;
  }
  __device__ void finish(int64_t m, const Acc& a, int64_t) const {
    if constexpr (std::is_floating_point_v<Out>) out[m] = a.j < 0 ? Out(empty) : Out(a.v);
    else out[m] = Out(a.v);
    if (index) index[m] = a.j;
  }
};
template <class T, bool kMax, class Out, class F>
Extreme<T, Out, kMax, F> extreme(Out* out, int64_t* index, F f, double empty = -INFINITY) {
  return {out, index, f, empty};
}

// Second pass of var/stddev: Σ (x - c) and Σ (x - c)² around the mean c.
template <class T>
struct Centered2 {
  struct Acc {
    double c, s1, s2;
  };
  T* out;
  const double* centre;
  double correction;
  bool take_sqrt;
  __device__ Acc init(int64_t m) const { return {centre[m], 0, 0}; }
  __device__ void step(Acc& a, T x, int64_t) const {
    const double d = double(x) - a.c;
    a.s1 += d;
    a.s2 += d * d;
  }
  __device__ void merge(Acc& a, const Acc& b) const {
    a.s1 += b.s1;
    a.s2 += b.s2;
  }
  __device__ void finish(int64_t m, const Acc& a, int64_t n) const {
    const double m2 = fmax(0.0, a.s2 - (n > 0 ? a.s1 * a.s1 / double(n) : 0.0));
    const double v = m2 / fmax(0.0, double(n) - correction);
    out[m] = T(take_sqrt ? std::sqrt(v) : v);
  }
};

// Second pass of logsumexp: c + log Σ exp(x - c) around the max c.
template <class T>
struct CenteredExp {
  struct Acc {
    double c, s;
  };
  T* out;
  const double* centre;
  __device__ Acc init(int64_t m) const { return {centre[m], 0}; }
  __device__ void step(Acc& a, T x, int64_t) const {
    if (isfinite(a.c)) a.s += double(std::exp(x - T(a.c)));  // else the result is c itself
  }
  __device__ void merge(Acc& a, const Acc& b) const { a.s += b.s; }
  __device__ void finish(int64_t m, const Acc& a, int64_t) const {
    out[m] = T(isfinite(a.c) ? a.c + std::log(a.s) : a.c);
  }
};

template <class T>
void norm_cuda(const Tensor& x, const Geometry& g, T* out, double p) {
  if (p == INFINITY) reduce_with<T>(x, g, extreme<T, true>(out, nullptr, Magnitude{}, 0.0));
  else if (p == -INFINITY) reduce_with<T>(x, g, extreme<T, false>(out, nullptr, Magnitude{}, INFINITY));
  else if (p == 0) reduce_with<T>(x, g, map_sum<T>(out, NonZero{}, AsIs{}));
  else if (p == 1) reduce_with<T>(x, g, map_sum<T>(out, AbsValue{}, AsIs{}));
  else if (p == 2) reduce_with<T>(x, g, map_sum<T>(out, Square{}, SqrtOf{}));
  else reduce_with<T>(x, g, map_sum<T>(out, AbsPow{p}, RootOf{p}));
}

void reduce_cuda(ReduceOp op, const Tensor& out, const Tensor& indices, const Tensor& x,
                 const std::vector<bool>& mask, const ReduceParams& params) {
  const Geometry g = geometry(x, mask);
  int64_t* idx = indices.defined() ? indices.data<int64_t>() : nullptr;
  switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::Prod:
    case ReduceOp::ProdNonzero:
      dispatch_all(x.dtype(), op == ReduceOp::Sum ? "sum" : "prod", [&](auto tag) {
        using T = typename decltype(tag)::type;
        using Out = std::conditional_t<std::is_floating_point_v<T>, T, int64_t>;
        Out* o = out.data<Out>();
        if (op == ReduceOp::Sum) reduce_with<T>(x, g, map_sum<T>(o, ToWide<T>{}, AsIs{}));
        else reduce_with<T>(x, g, Product<T, Out>{o, op == ReduceOp::ProdNonzero ? idx : nullptr});
      });
      break;
    case ReduceOp::Max:
    case ReduceOp::Min:
    case ReduceOp::ArgMax:
    case ReduceOp::ArgMin:
      dispatch_numeric(x.dtype(), "max/min", [&](auto tag) {
        using T = typename decltype(tag)::type;
        T* o = out.data<T>();
        if (op == ReduceOp::Max || op == ReduceOp::ArgMax) reduce_with<T>(x, g, extreme<T, true>(o, idx, Identity{}));
        else reduce_with<T>(x, g, extreme<T, false>(o, idx, Identity{}));
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
        if (op == ReduceOp::Mean) {
          reduce_with<T>(x, g, map_sum<T>(o, AsDouble{}, MeanOf{}));
        } else if (op == ReduceOp::Norm) {
          norm_cuda<T>(x, g, o, params.p);
        } else {
          Tensor centre = Tensor::empty({g.M}, kFloat64, x.device());
          double* c = centre.data<double>();
          if (op == ReduceOp::LogSumExp) {
            reduce_with<T>(x, g, extreme<T, true>(c, nullptr, Identity{}));
            reduce_with<T>(x, g, CenteredExp<T>{o, c});
          } else {
            reduce_with<T>(x, g, map_sum<T>(c, AsDouble{}, MeanOf{}));
            reduce_with<T>(x, g, Centered2<T>{o, c, params.correction, op == ReduceOp::Std});
          }
        }
      });
      break;
  }
}

// -1, 0, 1, or NaN for NaN (so a NaN input yields a NaN gradient).
template <class T>
__device__ inline T sign_of(T x) {
  return x > 0 ? T(1) : x < 0 ? T(-1) : x == 0 ? T(0) : x;
}

template <class T>
void reduce_grad_typed(ReduceGradOp op, const Tensor& out, const std::vector<Tensor>& in, double p) {
  switch (op) {
    case ReduceGradOp::SoftmaxGrad:
      cuda_map<T, T, T, T>([] __device__(T x, T y, T g) { return y == T(-INFINITY) ? T(0) : T(g * std::exp(x - y)); },
                           out, {in[0], in[1], in[2]});
      break;
    case ReduceGradOp::NormGrad:
      if (std::isinf(p)) {
        cuda_map<T, T, T, T>([] __device__(T x, T y, T g) { return std::fabs(x) == y ? T(g * sign_of(x)) : T(0); },
                             out, {in[0], in[1], in[2]});
      } else if (p == 2) {
        cuda_map<T, T, T, T>([] __device__(T x, T y, T g) { return y == 0 ? T(0) : T(g * x / y); }, out,
                             {in[0], in[1], in[2]});
      } else if (p == 1) {
        cuda_map<T, T, T, T>([] __device__(T x, T, T g) { return T(g * sign_of(x)); }, out, {in[0], in[1], in[2]});
      } else {
        cuda_map<T, T, T, T>(
            [p] __device__(T x, T y, T g) {
              if (y == 0 || x == 0) return T(0);
              return T(g * sign_of(x) * std::pow(std::fabs(double(x)) / double(y), p - 1));
            },
            out, {in[0], in[1], in[2]});
      }
      break;
    case ReduceGradOp::TieMask:
      cuda_map<T, T, T>([] __device__(T x, T y) { return T(x == y || (x != x && y != y)); }, out, {in[0], in[1]});
      break;
    case ReduceGradOp::AbsTieMask:
      cuda_map<T, T, T>([] __device__(T x, T y) { return T(std::fabs(x) == y || (x != x && y != y)); }, out,
                        {in[0], in[1]});
      break;
    case ReduceGradOp::SelectGrad:
      cuda_map<T, int64_t, int64_t, T>([] __device__(int64_t pos, int64_t i, T g) { return pos == i ? g : T(0); }, out,
                                       {in[0], in[1], in[2]});
      break;
    case ReduceGradOp::ProdGrad:
      cuda_map<T, T, T, int64_t, T>(
          [] __device__(T x, T nonzero, int64_t zeros, T g) {
            if (zeros == 0) return T(g * nonzero / x);
            return zeros == 1 && x == 0 ? T(g * nonzero) : T(0);
          },
          out, {in[0], in[1], in[2], in[3]});
      break;
    case ReduceGradOp::SafeDiv:
      cuda_map<T, T, T>([] __device__(T a, T b) { return b == 0 ? T(0) : T(a / b); }, out, {in[0], in[1]});
      break;
  }
}

void reduce_grad_cuda(ReduceGradOp op, const Tensor& out, const std::vector<Tensor>& in, double p) {
  dispatch_floating(out.dtype(), "reduce backward", [&](auto tag) {
    reduce_grad_typed<typename decltype(tag)::type>(op, out, in, p);
  });
}

}  // namespace
KS_REGISTER_KERNEL(reduce_kernel, CUDA, reduce_cuda);
KS_REGISTER_KERNEL(reduce_grad_kernel, CUDA, reduce_grad_cuda);
}  // namespace ks::cuda
