// ops/softmax.cpp — softmax / log_softmax: checks and backward nodes; the
// loops are in cpu/softmax.cpp.
#include "ops/softmax.h"

#include "autograd/node.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"
#include "ops/unary.h"

namespace ks {

constinit KernelTable<SoftmaxKernel> softmax_kernel("softmax");
constinit KernelTable<SoftmaxBackwardKernel> softmax_backward_kernel("softmax_backward");

namespace {

Tensor softmax_forward(bool log, const Tensor& x, int64_t dim) {
  const char* name = log ? "log_softmax" : "softmax";
  KS_CHECK(x.defined(), name, ": undefined input");
  KS_CHECK(is_floating(x.dtype()), name, ": expected a floating tensor, got ", describe(x));
  const int64_t d = wrap_dim(dim, x.dim(), name);
  Tensor out = Tensor::empty(x.sizes(), x.dtype(), x.device());
  softmax_kernel(out.device(), log, out, x, d);
  if (needs_grad({x}))
    record(
        log ? "LogSoftmaxBackward" : "SoftmaxBackward", {x}, {out},
        [log, d, sy = SavedTensor(out)](const std::vector<Tensor>& g) {
          Tensor y = sy.unpack();
          if (GradMode::is_enabled())  // create_graph: the kernel's formula in differentiable ops
            return std::vector<Tensor>{log ? sub(g[0], mul(exp(y), sum(g[0], {d}, true)))
                                           : mul(y, sub(g[0], sum(mul(g[0], y), {d}, true)))};
          Tensor dx = Tensor::empty(y.sizes(), y.dtype(), y.device());
          softmax_backward_kernel(dx.device(), log, dx, g[0], y, d);
          return std::vector<Tensor>{dx};
        },
        HigherOrder::Supported);
  return out;
}

}  // namespace

Tensor softmax(const Tensor& x, int64_t dim) { return softmax_forward(false, x, dim); }
Tensor log_softmax(const Tensor& x, int64_t dim) { return softmax_forward(true, x, dim); }

}  // namespace ks
