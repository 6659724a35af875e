// ops/cuda/shape.cu — the CUDA kernel of triu/tril (the other block ops of
// shape.h are copies through views and need no kernel of their own).
//
// One thread per output element: out = x where (col − row >= diagonal) for
// triu, (col − row <= diagonal) for tril, zero elsewhere — a select, so the
// result equals the CPU's exactly. The row and column of an element come
// from two pseudo-operands of the geometry (stride 1 on that dim, 0
// elsewhere; dim_geometry.cuh). Any strides; no copies.
#include "ops/cuda/dim_geometry.cuh"
#include "ops/shape.h"

namespace ks::cuda {
namespace {

// Operands: out, x, row coordinate, column coordinate.
template <class T>
__global__ void triangle_elements(T* out, const T* x, int64_t n, int64_t diagonal, bool upper, DimGeometry<4> g) {
  for (int64_t e : grid_stride(n)) {
    int64_t off[4];
    g.offsets(e, off);
    const int64_t d = off[3] - off[2];
    const bool keep = upper ? d >= diagonal : d <= diagonal;
    out[off[0]] = keep ? x[off[1]] : T(0);
  }
}

template <class T> void triangle_typed(const Tensor& out, const Tensor& x, int64_t diagonal, bool upper) {
  const int64_t n = out.numel();
  const size_t rank = size_t(x.dim());
  Shape rows(rank, 0), cols(rank, 0);
  rows[rank - 2] = 1;
  cols[rank - 1] = 1;
  const auto g = dim_geometry<4>(x.sizes(), {out.strides(), x.strides(), rows, cols}, upper ? "triu" : "tril");
  const Device dev = out.device();
  DeviceGuard guard(dev);
  triangle_elements<T><<<grid_for(n, kThreads, dev.index), kThreads, 0, stream(dev)>>>(out.data<T>(), x.data<T>(), n,
                                                                                       diagonal, upper, g);
  KS_CUDA_LAUNCH_CHECK();
}

void triangle_cuda(const Tensor& out, const Tensor& x, int64_t diagonal, bool upper) {
  if (out.numel() == 0) return;
  dispatch_storage(x.dtype(), upper ? "triu" : "tril",
                   [&](auto tag) { triangle_typed<typename decltype(tag)::type>(out, x, diagonal, upper); });
}

}  // namespace
KS_REGISTER_KERNEL(triangle_kernel, CUDA, triangle_cuda);
}  // namespace ks::cuda
