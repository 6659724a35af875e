// ops/cpu/scan.cpp — the CPU cumsum kernel.
//
// Along the innermost dim each line is one serial running sum and lines run
// in parallel. Along an outer dim — (B, T, D) summed over T — the running
// sums of a block of D advance together, one contiguous row per step, which
// vectorises and streams through memory. Strided inputs are walked in place
// (cheaper than copying: core's copy of a transposed view costs more than the
// strided scan). float32 accumulates in double, integers in int64.
#include <algorithm>

#include "ops/cpu/dim_lines.h"
#include "ops/scan.h"
#include "ops/through_float32.h"

namespace ks::cpu {
namespace {

// Running sums kept at once: 16 KiB of doubles stays in L1 while whole rows
// of a typical width stream through (256-wide tiles made a (8, 1024, 512)
// float32 scan along T about 1.7x slower).
constexpr int64_t kTile = 2048;

template <class T> void cumsum_typed(const Tensor& out, const Tensor& x, int64_t dim, bool reverse) {
  using Acc = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;
  T* o = out.data<T>();
  const T* xp = x.data<T>();
  auto g = make_dim_lines<2>(x.sizes(), dim, {out.strides(), x.strides()});
  const bool contig = g.inner_contiguous();
  const int64_t n = g.n;
  // Step j of the scan visits position t along dim.
  const int64_t first = reverse ? n - 1 : 0, dir = reverse ? -1 : 1;
  for_each_line_block(g, [&](std::array<int64_t, 2> base, int64_t, int64_t len) {
    if (len == 1) {
      Acc acc = 0;
      for (int64_t j = 0, t = first; j < n; ++j, t += dir) {
        acc += Acc(xp[base[1] + t * g.step[1]]);
        o[base[0] + t * g.step[0]] = T(acc);
      }
      return;
    }
    Acc acc[kTile];
    for (int64_t l0 = 0; l0 < len; l0 += kTile) {
      const int64_t tl = std::min(kTile, len - l0);
      std::fill(acc, acc + tl, Acc(0));
      for (int64_t j = 0, t = first; j < n; ++j, t += dir) {
        T* orow = o + base[0] + t * g.step[0] + l0 * g.inner[0];
        const T* xrow = xp + base[1] + t * g.step[1] + l0 * g.inner[1];
        if (contig) {
          for (int64_t l = 0; l < tl; ++l) {
            acc[l] += Acc(xrow[l]);
            orow[l] = T(acc[l]);
          }
        } else {
          for (int64_t l = 0; l < tl; ++l) {
            acc[l] += Acc(xrow[l * g.inner[1]]);
            orow[l * g.inner[0]] = T(acc[l]);
          }
        }
      }
    }
  });
}

void cumsum_cpu(const Tensor& out, const Tensor& x, int64_t dim, bool reverse) {
  if (out.numel() == 0) return;
  dispatch_numeric(x.dtype(), "cumsum",
                   [&](auto tag) { cumsum_typed<typename decltype(tag)::type>(out, x, dim, reverse); });
}

}  // namespace
KS_REGISTER_KERNEL(cumsum_kernel, CPU, through_float32::cumsum<cumsum_cpu>);
}  // namespace ks::cpu
