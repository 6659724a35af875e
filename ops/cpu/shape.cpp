// ops/cpu/shape.cpp — CPU kernel of triu/tril (the other block ops of
// shape.h are copies through views and need no kernel of their own).
//
// Each row of the last two dims splits into a zero run and a copied run at
// column row + diagonal, so both runs are plain loops that vectorise when the
// columns are contiguous.
#include <algorithm>

#include "ops/cpu/dim_lines.h"
#include "ops/shape.h"

namespace ks::cpu {
namespace {

template <class T> void triangle_typed(const Tensor& out, const Tensor& x, int64_t diagonal, bool upper) {
  T* o = out.data<T>();
  const T* xp = x.data<T>();
  const int64_t rows_dim = x.dim() - 2;
  auto g = make_dim_lines<2>(x.sizes(), rows_dim, {out.strides(), x.strides()});
  const bool contig = g.inner_contiguous();
  for_each_line_block(g, [&](std::array<int64_t, 2> base, int64_t l0, int64_t len) {
    for (int64_t i = 0; i < g.n; ++i) {
      // Columns [l0, l0 + cut) of this block are kept by tril and zeroed by triu.
      const int64_t edge = upper ? i + diagonal : i + diagonal + 1;
      const int64_t cut = std::clamp<int64_t>(edge - l0, 0, len);
      const int64_t zero_begin = upper ? 0 : cut, zero_end = upper ? cut : len;
      const int64_t keep_begin = upper ? cut : 0, keep_end = upper ? len : cut;
      T* orow = o + base[0] + i * g.step[0];
      const T* xrow = xp + base[1] + i * g.step[1];
      if (contig) {
        for (int64_t l = zero_begin; l < zero_end; ++l) orow[l] = T(0);
        for (int64_t l = keep_begin; l < keep_end; ++l) orow[l] = xrow[l];
      } else {
        for (int64_t l = zero_begin; l < zero_end; ++l) orow[l * g.inner[0]] = T(0);
        for (int64_t l = keep_begin; l < keep_end; ++l) orow[l * g.inner[0]] = xrow[l * g.inner[1]];
      }
    }
  });
}

void triangle_cpu(const Tensor& out, const Tensor& x, int64_t diagonal, bool upper) {
  if (out.numel() == 0) return;
  dispatch_storage(x.dtype(), upper ? "triu" : "tril",
                   [&](auto tag) { triangle_typed<typename decltype(tag)::type>(out, x, diagonal, upper); });
}

}  // namespace
KS_REGISTER_KERNEL(triangle_kernel, CPU, triangle_cpu);
}  // namespace ks::cpu
