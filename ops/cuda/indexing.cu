// ops/cuda/indexing.cu — CUDA kernels of index_select, index_add, gather and
// scatter_add, with the contract and the results of ops/cpu/indexing.cpp.
//
// Indices are range-checked on the device before any work (check_index_range:
// the first bad index in row-major order comes back to the host and the
// error names it, as on the CPU), so the kernels below never see a bad one.
// The selects run one thread per output element (coalesced writes). The adds
// run one thread per position outside `dim` (a "column"), which walks the
// index in ascending order and adds into its own output elements: no two
// threads touch one element, so there are no atomics and every element gets
// its contributions in the CPU's order, in the element type — bit for bit
// the CPU's result. Parallelism is the number of columns (P·L), enough for
// the shapes models use (index_select's backward over rows of width D).
// Any strides on every operand; no copies. The 16-bit selects move elements
// as they are; the 16-bit adds run through float32 (ops/through_float32.h).
#include "core/copy.h"
#include "core/factory.h"
#include "ops/cuda/dim_geometry.cuh"
#include "ops/indexing.h"
#include "ops/through_float32.h"

namespace ks::cuda {

namespace {

// first_bad = the smallest position whose index is outside [0, size) (n if none).
__global__ void first_bad_index(const int64_t* idx, int64_t n, int64_t size, unsigned long long* first_bad) {
  unsigned long long mine = (unsigned long long)n;
  for (int64_t i : grid_stride(n))
    if ((idx[i] < 0 || idx[i] >= size) && (unsigned long long)i < mine) mine = (unsigned long long)i;
  if (mine < (unsigned long long)n) atomicMin(first_bad, mine);
}

}  // namespace

void check_index_range(const char* op, const Tensor& index_in, int64_t dim, int64_t size) {
  const Tensor index = contiguous_raw(index_in);
  const int64_t n = index.numel();
  if (n == 0) return;
  const Device dev = index.device();
  Tensor bad = full({}, double(n), {.dtype = kInt64, .device = dev});
  {
    DeviceGuard guard(dev);
    first_bad_index<<<grid_for(n, kThreads, dev.index), kThreads, 0, stream(dev)>>>(
        index.data<int64_t>(), n, size, static_cast<unsigned long long*>(bad.data_ptr()));
    KS_CUDA_LAUNCH_CHECK();
  }
  const int64_t first = bad.item<int64_t>();  // synchronises the stream
  if (first < n) {
    const int64_t value = index.alias({}, {}, index.storage_offset() + first).item<int64_t>();
    throw Error(str(op, ": index ", value, " is out of range for dim ", dim, " of size ", size));
  }
}

namespace {

// The strides of `t` with the one along `dim` replaced by `along`.
Shape strides_with(const Tensor& t, int64_t dim, int64_t along) {
  Shape s = t.strides();
  s[size_t(dim)] = along;
  return s;
}

// A stride vector for `rank` dims: `along` at dim, 0 elsewhere.
Shape only_along(size_t rank, int64_t dim, int64_t along) {
  Shape s(rank, 0);
  s[size_t(dim)] = along;
  return s;
}

// Operands: out, x (0 along dim), index (its stride along dim, 0 elsewhere).
template <class T>
__global__ void index_select_kernel_(T* out, const T* x, const int64_t* index, int64_t n, int64_t x_step,
                                     DimGeometry<3> g) {
  for (int64_t e : grid_stride(n)) {
    int64_t off[3];
    g.offsets(e, off);
    out[off[0]] = x[off[1] + index[off[2]] * x_step];
  }
}

// Columns of src's shape with size 1 along dim; operands: out (0 along dim), src.
template <class T>
__global__ void index_add_kernel_(T* out, const T* src, const int64_t* index, int64_t columns, int64_t n,
                                  int64_t index_step, int64_t out_step, int64_t src_step, DimGeometry<2> g) {
  for (int64_t c : grid_stride(columns)) {
    int64_t off[2];
    g.offsets(c, off);
    for (int64_t j = 0; j < n; ++j) out[off[0] + index[j * index_step] * out_step] += src[off[1] + j * src_step];
  }
}

// Operands over index's shape: out, index, x (0 along dim).
template <class T>
__global__ void gather_kernel_(T* out, const T* x, const int64_t* index, int64_t n, int64_t x_step, DimGeometry<3> g) {
  for (int64_t e : grid_stride(n)) {
    int64_t off[3];
    g.offsets(e, off);
    out[off[0]] = x[off[2] + index[off[1]] * x_step];
  }
}

// Columns of index's shape with size 1 along dim; operands: out (0 along dim), index, src.
template <class T>
__global__ void scatter_add_kernel_(T* out, const T* src, const int64_t* index, int64_t columns, int64_t n,
                                    int64_t out_step, int64_t index_step, int64_t src_step, DimGeometry<3> g) {
  for (int64_t c : grid_stride(columns)) {
    int64_t off[3];
    g.offsets(c, off);
    for (int64_t j = 0; j < n; ++j)
      out[off[0] + index[off[1] + j * index_step] * out_step] += src[off[2] + j * src_step];
  }
}

template <class T> void index_select_typed(const Tensor& out, const Tensor& x, int64_t dim, const Tensor& index) {
  const int64_t n = out.numel();
  if (n == 0) return;
  const auto g = dim_geometry<3>(
      out.sizes(), {out.strides(), strides_with(x, dim, 0), only_along(size_t(out.dim()), dim, index.stride(0))},
      "index_select");
  const Device dev = out.device();
  DeviceGuard guard(dev);
  index_select_kernel_<T><<<grid_for(n, kThreads, dev.index), kThreads, 0, stream(dev)>>>(
      out.data<T>(), x.data<T>(), index.data<int64_t>(), n, x.stride(dim), g);
  KS_CUDA_LAUNCH_CHECK();
}

template <class T> void index_add_typed(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src) {
  Shape columns_shape = src.sizes();
  columns_shape[size_t(dim)] = 1;
  const int64_t columns = numel_of(columns_shape), n = src.size(dim);
  if (columns == 0 || n == 0) return;
  const auto g = dim_geometry<2>(columns_shape, {strides_with(out, dim, 0), src.strides()}, "index_add");
  const Device dev = out.device();
  DeviceGuard guard(dev);
  index_add_kernel_<T><<<grid_for(columns, kThreads, dev.index), kThreads, 0, stream(dev)>>>(
      out.data<T>(), src.data<T>(), index.data<int64_t>(), columns, n, index.stride(0), out.stride(dim),
      src.stride(dim), g);
  KS_CUDA_LAUNCH_CHECK();
}

template <class T> void gather_typed(const Tensor& out, const Tensor& x, int64_t dim, const Tensor& index) {
  const int64_t n = out.numel();
  if (n == 0) return;
  const auto g = dim_geometry<3>(index.sizes(), {out.strides(), index.strides(), strides_with(x, dim, 0)}, "gather");
  const Device dev = out.device();
  DeviceGuard guard(dev);
  gather_kernel_<T><<<grid_for(n, kThreads, dev.index), kThreads, 0, stream(dev)>>>(
      out.data<T>(), x.data<T>(), index.data<int64_t>(), n, x.stride(dim), g);
  KS_CUDA_LAUNCH_CHECK();
}

template <class T> void scatter_add_typed(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src) {
  Shape columns_shape = index.sizes();
  columns_shape[size_t(dim)] = 1;
  const int64_t columns = numel_of(columns_shape), n = index.size(dim);
  if (columns == 0 || n == 0) return;
  const auto g =
      dim_geometry<3>(columns_shape, {strides_with(out, dim, 0), index.strides(), src.strides()}, "scatter_add");
  const Device dev = out.device();
  DeviceGuard guard(dev);
  scatter_add_kernel_<T><<<grid_for(columns, kThreads, dev.index), kThreads, 0, stream(dev)>>>(
      out.data<T>(), src.data<T>(), index.data<int64_t>(), columns, n, out.stride(dim), index.stride(dim),
      src.stride(dim), g);
  KS_CUDA_LAUNCH_CHECK();
}

void index_select_cuda(const Tensor& out, const Tensor& x, int64_t dim, const Tensor& index) {
  check_index_range("index_select", index, dim, x.size(dim));
  dispatch_storage(x.dtype(), "index_select",
                   [&](auto tag) { index_select_typed<typename decltype(tag)::type>(out, x, dim, index); });
}

void index_add_cuda(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src) {
  check_index_range("index_add", index, dim, out.size(dim));
  dispatch_numeric(out.dtype(), "index_add",
                   [&](auto tag) { index_add_typed<typename decltype(tag)::type>(out, dim, index, src); });
}

void gather_cuda(const Tensor& out, const Tensor& x, int64_t dim, const Tensor& index) {
  check_index_range("gather", index, dim, x.size(dim));
  dispatch_storage(x.dtype(), "gather",
                   [&](auto tag) { gather_typed<typename decltype(tag)::type>(out, x, dim, index); });
}

void scatter_add_cuda(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src) {
  check_index_range("scatter_add", index, dim, out.size(dim));
  dispatch_numeric(out.dtype(), "scatter_add",
                   [&](auto tag) { scatter_add_typed<typename decltype(tag)::type>(out, dim, index, src); });
}

}  // namespace
KS_REGISTER_KERNEL(index_select_kernel, CUDA, index_select_cuda);
KS_REGISTER_KERNEL(index_add_kernel, CUDA, through_float32::index_add<index_add_cuda>);
KS_REGISTER_KERNEL(gather_kernel, CUDA, gather_cuda);
KS_REGISTER_KERNEL(scatter_add_kernel, CUDA, through_float32::scatter_add<scatter_add_cuda>);
}  // namespace ks::cuda
