// ops/cpu/reduce.cpp — CPU reduction kernels.
//
// The input is viewed as (kept dims..., reduced dims...). Two layouts run
// without a copy: reduced elements contiguous (row reduction: one long
// vectorised sum per output) and kept elements contiguous (column reduction:
// each step adds one whole contiguous slab into the outputs, e.g. summing a
// (N, C) gradient over N). Any other layout is first copied into the first.
// Sums accumulate in double so long float32 reductions keep their digits.
#include <vector>

#include "core/copy.h"
#include "core/parallel.h"
#include "ops/reduce.h"

namespace ks::cpu {
namespace {

struct Split {  // x's dims split into kept and reduced, each coalesced
  Shape kept_sizes, kept_strides, red_sizes, red_strides;
};

// Coalesces dims (outermost first) whose strides nest exactly.
void coalesce(Shape& sizes, Shape& strides) {
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
  if (s2.empty()) { s2.push_back(1); st2.push_back(1); }
  sizes = std::move(s2);
  strides = std::move(st2);
}

Split split_dims(const Tensor& x, const std::vector<bool>& mask) {
  Split s;
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (mask[size_t(d)]) { s.red_sizes.push_back(x.size(d)); s.red_strides.push_back(x.stride(d)); }
    else { s.kept_sizes.push_back(x.size(d)); s.kept_strides.push_back(x.stride(d)); }
  }
  coalesce(s.kept_sizes, s.kept_strides);
  coalesce(s.red_sizes, s.red_strides);
  return s;
}

// Offset of flat index i in a (sizes, strides) odometer.
inline int64_t offset_of(int64_t i, const Shape& sizes, const Shape& strides) {
  int64_t off = 0;
  for (int64_t d = int64_t(sizes.size()) - 1; d >= 0; --d) {
    off += (i % sizes[d]) * strides[d];
    i /= sizes[d];
  }
  return off;
}

template <class T>
void sum_cpu(const Tensor& out, const Tensor& x_in, const std::vector<bool>& mask) {
  using Acc = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;
  Tensor x = x_in;
  Split s = split_dims(x, mask);
  const int64_t M = numel_of(s.kept_sizes), N = numel_of(s.red_sizes);
  T* o = out.data<T>();
  const bool rows_contig = s.red_sizes.size() == 1 && s.red_strides[0] == 1;
  const bool cols_contig = s.kept_sizes.size() == 1 && s.kept_strides[0] == 1 && M > 1;
  if (!rows_contig && !cols_contig) {
    // Copy into (kept, reduced) order, then reduce rows.
    Shape perm_sizes, perm_strides;
    for (int64_t d = 0; d < x.dim(); ++d)
      if (!mask[size_t(d)]) { perm_sizes.push_back(x.size(d)); perm_strides.push_back(x.stride(d)); }
    for (int64_t d = 0; d < x.dim(); ++d)
      if (mask[size_t(d)]) { perm_sizes.push_back(x.size(d)); perm_strides.push_back(x.stride(d)); }
    x = contiguous_raw(x.alias(perm_sizes, perm_strides, x.storage_offset()));
    s = Split{{M}, {N}, {N}, {1}};
  }
  const T* p = static_cast<const T*>(x.data_ptr());
  if (s.red_sizes.size() == 1 && s.red_strides[0] == 1) {
    parallel_for(0, M, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(N, 1)), [&](int64_t b, int64_t e) {
      for (int64_t m = b; m < e; ++m) {
        const T* row = p + offset_of(m, s.kept_sizes, s.kept_strides);
        Acc acc = 0;
        for (int64_t j = 0; j < N; ++j) acc += Acc(row[j]);
        o[m] = T(acc);
      }
    });
    return;
  }
  // Column reduction: kept elements contiguous.
  parallel_for(0, M, std::max<int64_t>(64, kElementwiseGrain / std::max<int64_t>(N, 1)), [&](int64_t b, int64_t e) {
    std::vector<Acc> acc(size_t(e - b), Acc(0));
    for (int64_t r = 0; r < N; ++r) {
      const T* slab = p + offset_of(r, s.red_sizes, s.red_strides) + b;
      for (int64_t m = 0; m < e - b; ++m) acc[size_t(m)] += Acc(slab[m]);
    }
    for (int64_t m = b; m < e; ++m) o[m] = T(acc[size_t(m - b)]);
  });
}

void reduce_cpu(ReduceOp op, const Tensor& out, const Tensor& x, const std::vector<bool>& mask) {
  if (x.numel() == 0) {  // a sum over nothing is 0
    fill_(out, 0.0);
    return;
  }
  dispatch_numeric(x.dtype(), "sum", [&](auto tag) {
    using T = typename decltype(tag)::type;
    switch (op) {
      case ReduceOp::Sum: sum_cpu<T>(out, x, mask); break;
    }
  });
}

}  // namespace
KS_REGISTER_KERNEL(reduce_kernel, CPU, reduce_cpu);
}  // namespace ks::cpu
