// ops/cuda/scan.cu — the CUDA cumsum kernel, with the results of
// ops/cpu/scan.cpp bit for bit.
//
// One thread per line along `dim` (every position outside dim), walking the
// line serially in the CPU's order: float32 accumulates in double, integers
// in int64, so each output is the CPU's. Along an outer dim — (B, T, D)
// summed over T, the linear-attention prefix sums — neighbouring threads own
// neighbouring columns and every step reads and writes one coalesced row.
// Along the last dim each thread walks its own row (uncoalesced, but those
// scans are short in the models here). Any strides; no copies. A parallel
// (work-efficient) scan would add in another order; not done. bfloat16 and
// float16 run through float32 (ops/through_float32.h), as on the CPU.
#include <type_traits>

#include "ops/cuda/dim_geometry.cuh"
#include "ops/scan.h"
#include "ops/through_float32.h"

namespace ks::cuda {
namespace {

// Lines of x's shape with size 1 along dim; operands: out, x.
template <class T>
__global__ void cumsum_lines(T* out, const T* x, int64_t lines, int64_t n, int64_t out_step, int64_t x_step,
                             bool reverse, DimGeometry<2> g) {
  using Acc = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;
  for (int64_t c : grid_stride(lines)) {
    int64_t off[2];
    g.offsets(c, off);
    Acc acc = 0;
    for (int64_t j = 0; j < n; ++j) {
      const int64_t t = reverse ? n - 1 - j : j;
      acc += Acc(x[off[1] + t * x_step]);
      out[off[0] + t * out_step] = T(acc);
    }
  }
}

template <class T> void cumsum_typed(const Tensor& out, const Tensor& x, int64_t dim, bool reverse) {
  Shape lines_shape = x.sizes();
  lines_shape[size_t(dim)] = 1;
  const int64_t lines = numel_of(lines_shape), n = x.size(dim);
  const auto g = dim_geometry<2>(lines_shape, {out.strides(), x.strides()}, "cumsum");
  const Device dev = out.device();
  DeviceGuard guard(dev);
  cumsum_lines<T><<<grid_for(lines, kThreads, dev.index), kThreads, 0, stream(dev)>>>(
      out.data<T>(), x.data<T>(), lines, n, out.stride(dim), x.stride(dim), reverse, g);
  KS_CUDA_LAUNCH_CHECK();
}

void cumsum_cuda(const Tensor& out, const Tensor& x, int64_t dim, bool reverse) {
  if (out.numel() == 0) return;
  dispatch_numeric(x.dtype(), "cumsum",
                   [&](auto tag) { cumsum_typed<typename decltype(tag)::type>(out, x, dim, reverse); });
}

}  // namespace
KS_REGISTER_KERNEL(cumsum_kernel, CUDA, through_float32::cumsum<cumsum_cuda>);
}  // namespace ks::cuda
