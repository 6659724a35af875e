// ops/cpu/indexing.cpp — CPU kernels of index_select, index_add, gather and
// scatter_add, all walking their operands as (P, n, L) lines around `dim`
// (dim_lines.h).
//
// The adding kernels never split the index dim across threads: each task owns
// a block of (P, L) positions and runs through the whole index in order, so
// every output element receives its contributions in ascending index order
// whatever the thread count (no atomics, bitwise reproducible).
// 1-D indices are range-checked before any work; same-rank indices are
// checked on the fly and, if one is bad, rescanned in order so the error
// names the first bad index.
#include <atomic>
#include <cstring>

#include "core/copy.h"
#include "ops/cpu/dim_lines.h"
#include "ops/indexing.h"
#include "ops/through_float32.h"

namespace ks::cpu {
namespace {

// Throws for the first index (row-major) outside [0, size).
void check_range(const char* op, const Tensor& index, int64_t dim, int64_t size) {
  Tensor c = contiguous_raw(index);
  const int64_t* p = c.data<int64_t>();
  for (int64_t i = 0; i < c.numel(); ++i)
    KS_CHECK(p[i] >= 0 && p[i] < size, op, ": index ", p[i], " is out of range for dim ", dim, " of size ", size);
}

inline bool out_of_range(int64_t r, int64_t size) { return uint64_t(r) >= uint64_t(size); }

template <class T> void index_select_typed(const Tensor& out, const Tensor& x, int64_t dim, const Tensor& index) {
  const int64_t* ip = index.data<int64_t>();
  const int64_t is = index.stride(0);
  T* o = out.data<T>();
  const T* xp = x.data<T>();
  auto g = make_dim_lines<2>(out.sizes(), dim, {out.strides(), x.strides()});
  const bool contig = g.inner_contiguous();
  for_each_line_block(g, [&](std::array<int64_t, 2> base, int64_t, int64_t len) {
    for (int64_t j = 0; j < g.n; ++j) {
      T* dst = o + base[0] + j * g.step[0];
      const T* src = xp + base[1] + ip[j * is] * g.step[1];
      if (len == 1)
        *dst = *src;
      else if (contig)
        std::memcpy(dst, src, size_t(len) * sizeof(T));
      else
        for (int64_t l = 0; l < len; ++l) dst[l * g.inner[0]] = src[l * g.inner[1]];
    }
  });
}

template <class T> void index_add_typed(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src) {
  const int64_t* ip = index.data<int64_t>();
  const int64_t is = index.stride(0);
  T* o = out.data<T>();
  const T* sp = src.data<T>();
  auto g = make_dim_lines<2>(src.sizes(), dim, {out.strides(), src.strides()});
  const bool contig = g.inner_contiguous();
  for_each_line_block(g, [&](std::array<int64_t, 2> base, int64_t, int64_t len) {
    for (int64_t j = 0; j < g.n; ++j) {
      T* dst = o + base[0] + ip[j * is] * g.step[0];
      const T* s = sp + base[1] + j * g.step[1];
      if (contig)
        for (int64_t l = 0; l < len; ++l) dst[l] += s[l];
      else
        for (int64_t l = 0; l < len; ++l) dst[l * g.inner[0]] += s[l * g.inner[1]];
    }
  });
}

template <class T> void gather_typed(const Tensor& out, const Tensor& x, int64_t dim, const Tensor& index) {
  const int64_t* ip = index.data<int64_t>();
  T* o = out.data<T>();
  const T* xp = x.data<T>();
  const int64_t nx = x.size(dim);
  auto g = make_dim_lines<3>(index.sizes(), dim, {out.strides(), index.strides(), x.strides()});
  const bool contig = g.inner_contiguous();
  std::atomic<bool> bad{false};
  for_each_line_block(g, [&](std::array<int64_t, 3> base, int64_t, int64_t len) {
    bool b = false;
    for (int64_t j = 0; j < g.n; ++j) {
      T* orow = o + base[0] + j * g.step[0];
      const int64_t* irow = ip + base[1] + j * g.step[1];
      const T* xrow = xp + base[2];
      if (contig) {
        for (int64_t l = 0; l < len; ++l) {
          const int64_t r = irow[l];
          if (out_of_range(r, nx)) {
            b = true;
            continue;
          }
          orow[l] = xrow[r * g.step[2] + l];
        }
      } else {
        for (int64_t l = 0; l < len; ++l) {
          const int64_t r = irow[l * g.inner[1]];
          if (out_of_range(r, nx)) {
            b = true;
            continue;
          }
          orow[l * g.inner[0]] = xrow[r * g.step[2] + l * g.inner[2]];
        }
      }
    }
    if (b) bad.store(true, std::memory_order_relaxed);
  });
  if (bad.load()) check_range("gather", index, dim, nx);
}

template <class T> void scatter_add_typed(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src) {
  const int64_t* ip = index.data<int64_t>();
  T* o = out.data<T>();
  const T* sp = src.data<T>();
  const int64_t nout = out.size(dim);
  auto g = make_dim_lines<3>(index.sizes(), dim, {out.strides(), index.strides(), src.strides()});
  const bool contig = g.inner_contiguous();
  std::atomic<bool> bad{false};
  for_each_line_block(g, [&](std::array<int64_t, 3> base, int64_t, int64_t len) {
    bool b = false;
    T* obase = o + base[0];
    for (int64_t j = 0; j < g.n; ++j) {
      const int64_t* irow = ip + base[1] + j * g.step[1];
      const T* srow = sp + base[2] + j * g.step[2];
      for (int64_t l = 0; l < len; ++l) {
        const int64_t r = contig ? irow[l] : irow[l * g.inner[1]];
        if (out_of_range(r, nout)) {
          b = true;
          continue;
        }
        if (contig)
          obase[r * g.step[0] + l] += srow[l];
        else
          obase[r * g.step[0] + l * g.inner[0]] += srow[l * g.inner[2]];
      }
    }
    if (b) bad.store(true, std::memory_order_relaxed);
  });
  if (bad.load()) check_range("scatter_add", index, dim, nout);
}

void index_select_cpu(const Tensor& out, const Tensor& x, int64_t dim, const Tensor& index) {
  check_range("index_select", index, dim, x.size(dim));
  dispatch_storage(x.dtype(), "index_select",
                   [&](auto tag) { index_select_typed<typename decltype(tag)::type>(out, x, dim, index); });
}

void index_add_cpu(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src) {
  check_range("index_add", index, dim, out.size(dim));
  dispatch_numeric(out.dtype(), "index_add",
                   [&](auto tag) { index_add_typed<typename decltype(tag)::type>(out, dim, index, src); });
}

void gather_cpu(const Tensor& out, const Tensor& x, int64_t dim, const Tensor& index) {
  dispatch_storage(x.dtype(), "gather",
                   [&](auto tag) { gather_typed<typename decltype(tag)::type>(out, x, dim, index); });
}

void scatter_add_cpu(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src) {
  dispatch_numeric(out.dtype(), "scatter_add",
                   [&](auto tag) { scatter_add_typed<typename decltype(tag)::type>(out, dim, index, src); });
}

}  // namespace
KS_REGISTER_KERNEL(index_select_kernel, CPU, index_select_cpu);
KS_REGISTER_KERNEL(index_add_kernel, CPU, through_float32::index_add<index_add_cpu>);
KS_REGISTER_KERNEL(gather_kernel, CPU, gather_cpu);
KS_REGISTER_KERNEL(scatter_add_kernel, CPU, through_float32::scatter_add<scatter_add_cpu>);
}  // namespace ks::cpu
