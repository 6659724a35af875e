// ops/cuda/reduce.cu — CUDA reduction kernels (every ReduceOp of
// ops/reduce.h), and the registration of their backwards' elementwise pieces
// (ops/reduce_grad_kernels.h, run by cuda_map).
//
// The input is seen as M outputs × N reduced elements, each side a set of
// coalesced dims with x's own strides, so no layout needs a copy. One op is a
// reducer of ops/reduce_formulas.h (init / step / merge / finish, the same
// math as on the CPU), run by one of two kernels:
//   one block per output  — when the reduced elements are contiguous
//     (x (B, T, C) summed over C): threads stride over the row, then a tree
//     in shared memory merges their partial states;
//   one thread per output — otherwise (x (N, C) summed over N): neighbouring
//     threads read neighbouring columns, which is coalesced when a kept dim
//     is contiguous; also used when the rows are too short for a block.
// Merges do not depend on which thread saw which element (ties in
// max/min/argmax go to the smaller index, the first NaN wins), and the
// launch shape depends only on the tensor's shape, so results are
// deterministic; sums may differ from the CPU's in the last bits (another
// summation order). var/stddev and logsumexp take two passes, as on the CPU.
// bfloat16 and float16 sums and means read the 16-bit values and accumulate
// in double, as on the CPU; every other 16-bit reduction reaches the kernel
// as a float32 copy (ops/reduce.cpp).
// Not here: the formulas (reduce_formulas.h).
#include "core/cuda/loops.cuh"
#include "ops/reduce.h"
#include "ops/reduce_formulas.h"
#include "ops/reduce_grad_kernels.h"

namespace ks::cuda {
namespace {

using namespace reduce_formulas;

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

// Coalesces dims (as every strided loop does, core/strided_loop.h) into an IndexMap.
IndexMap index_map(const Shape& sizes, const Shape& strides) {
  const StridedLayout<1> L = make_strided_layout<1>(sizes, {strides}, {1});
  KS_CHECK(int(L.sizes.size()) <= kMaxDims, "reduce: more than ", kMaxDims, " non-mergeable dims (", sizes, ")");
  IndexMap m;
  m.ndim = int(L.sizes.size());
  for (int d = 0; d < m.ndim; ++d) {
    m.sizes[d] = L.sizes[size_t(m.ndim - 1 - d)];
    m.strides[d] = L.strides[0][size_t(m.ndim - 1 - d)];
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
  for (int64_t m : grid_stride(M)) {
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
template <class T, class R> void reduce_with(const Tensor& x, const Geometry& g, const R& r) {
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

void reduce_cuda(ReduceOp op, const Tensor& out, const Tensor& indices, const Tensor& x, const std::vector<bool>& mask,
                 const ReduceParams& params) {
  const Geometry g = geometry(x, mask);
  int64_t* idx = indices.defined() ? indices.data<int64_t>() : nullptr;
  const Tensor centre = two_pass(op) ? Tensor::empty({g.M}, kFloat64, x.device()) : Tensor();
  with_reducers</*Take16=*/true>(op, params, x.dtype(), out, idx, centre.defined() ? centre.data<double>() : nullptr,
                                 [&](auto tag, const auto& r) { reduce_with<typename decltype(tag)::type>(x, g, r); });
}

}  // namespace
KS_REGISTER_KERNEL(reduce_kernel, CUDA, reduce_cuda);
[[maybe_unused]] const bool reduce_grad_kernels_registered =
    reduce_grad_kernels::register_reduce_grad_kernels<CudaLoops>(DeviceType::CUDA);
}  // namespace ks::cuda
