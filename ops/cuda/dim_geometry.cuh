// ops/cuda/dim_geometry.cuh — the index arithmetic of the CUDA kernels that
// work along one dim (index_select/index_add, gather/scatter_add, cumsum,
// triu/tril), and the device-side check of index tensors.
//
// A DimGeometry<K> holds a shape (up to kMaxDims dims) and K operands' element
// strides over it; offsets(e) turns a row-major linear index into each
// operand's element offset. Kernels bend the strides to their need:
//   - a stride of 0 along `dim` for an operand whose position along dim comes
//     from an index tensor (the kernel adds index * step itself);
//   - a shape with size 1 along `dim` for "column" kernels, where one thread
//     owns every position but `dim` and walks dim serially, in ascending order
//     — which keeps scatters and scans deterministic without atomics, in the
//     CPU kernels' order (ops/cpu/dim_lines.h);
//   - a pseudo-operand with stride 1 on one dim and 0 elsewhere, whose
//     "offset" is that dim's coordinate (triu/tril's row and column).
// Unlike cuda_map (core/cuda/loops.cuh) nothing is coalesced: these kernels
// need the dims as the op defines them. nvcc only; holds no kernels of an op.
#pragma once

#include <string>

#include "core/cuda/loops.cuh"

namespace ks::cuda {

template <int K> struct DimGeometry {
  int nd = 0;
  int64_t size[kMaxDims];       // row-major: size[0] outermost
  int64_t stride[K][kMaxDims];  // in elements

  __device__ void offsets(int64_t e, int64_t (&off)[K]) const {
    for (int k = 0; k < K; ++k) off[k] = 0;
    for (int d = nd - 1; d >= 0; --d) {
      const int64_t q = e / size[d], idx = e - q * size[d];
      e = q;
      for (int k = 0; k < K; ++k) off[k] += idx * stride[k][d];
    }
  }
};

// Geometry over `shape` with the operands' strides (each a Shape of
// shape.size() entries, in elements). `what` names the op for the error
// about too many dims.
template <int K>
DimGeometry<K> dim_geometry(const Shape& shape, const std::array<Shape, K>& strides, const char* what) {
  KS_CHECK(shape.size() <= size_t(kMaxDims), what, ": cuda kernels take at most ", kMaxDims, " dims, got ", shape);
  DimGeometry<K> g;
  g.nd = int(shape.size());
  for (int d = 0; d < g.nd; ++d) {
    g.size[d] = shape[size_t(d)];
    for (int k = 0; k < K; ++k) g.stride[k][d] = strides[size_t(k)][size_t(d)];
  }
  return g;
}

// Throws "<op>: index V is out of range for dim D of size S" (the CPU
// kernels' message) for the first index, in index's row-major order, outside
// [0, size). One kernel and one small synchronous copy to the host.
void check_index_range(const char* op, const Tensor& index, int64_t dim, int64_t size);

}  // namespace ks::cuda
