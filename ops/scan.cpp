// ops/scan.cpp — cumsum's checks and backward; the loop is in cpu/scan.cpp.
// Its backward is a reverse scan: the kernel's, or under create_graph the same
// sum in differentiable ops (cumsum between two flips).
#include "ops/scan.h"

#include "autograd/node.h"
#include "ops/shape.h"
#include "ops/view.h"

namespace ks {

constinit KernelTable<CumsumKernel> cumsum_kernel("cumsum");

Tensor cumsum(const Tensor& x, int64_t dim) {
  KS_CHECK(x.defined(), "cumsum: undefined input");
  const int64_t d = wrap_dim(dim, x.dim(), "cumsum");
  if (x.dim() == 0) return clone(x);  // the running sum of one value
  Tensor out = Tensor::empty(x.sizes(), x.dtype(), x.device());
  cumsum_kernel(out.device(), out, x, d, false);
  // d out[t] / d x[s] = [s <= t], so dx[s] = sum_{t >= s} g[t]: a reverse scan.
  if (needs_grad({x}))
    record(
        "CumsumBackward", {x}, {out},
        [d](const std::vector<Tensor>& g) {
          if (GradMode::is_enabled())
            return std::vector<Tensor>{flip(cumsum(flip(g[0], {d}), d), {d})};  // create_graph
          Tensor gx = Tensor::empty(g[0].sizes(), g[0].dtype(), g[0].device());
          cumsum_kernel(gx.device(), gx, g[0], d, true);
          return std::vector<Tensor>{gx};
        },
        HigherOrder::Supported);
  return out;
}

}  // namespace ks
