// ops/reduce.cpp — reduction ops: checks, output shapes, backward formulas.
#include "ops/reduce.h"

#include "autograd/node.h"
#include "ops/view.h"

namespace ks {

constinit KernelTable<ReduceKernel> reduce_kernel("reduce");

std::vector<bool> reduction_mask(const Dims& dims, int64_t ndim, const char* op) {
  std::vector<bool> mask(size_t(ndim), dims.empty());
  for (int64_t d : dims) {
    int64_t w = wrap_dim(d, ndim, op);
    if (ndim == 0) continue;
    KS_CHECK(!mask[size_t(w)], op, ": dim ", d, " appears more than once in ", dims);
    mask[size_t(w)] = true;
  }
  return mask;
}

Shape reduced_shape(const Shape& sizes, const std::vector<bool>& mask, bool keepdim) {
  Shape out;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (!mask[d]) out.push_back(sizes[d]);
    else if (keepdim) out.push_back(1);
  }
  return out;
}

Tensor sum(const Tensor& x) { return sum(x, {}, false); }

Tensor sum(const Tensor& x, const Dims& dims, bool keepdim) {
  KS_CHECK(x.defined(), "sum: undefined input");
  std::vector<bool> mask = reduction_mask(dims, x.dim(), "sum");
  Tensor out = Tensor::empty(reduced_shape(x.sizes(), mask, true), x.dtype(), x.device());
  reduce_kernel(x.device(), ReduceOp::Sum, out, x, mask);
  if (!keepdim) out = out.alias(reduced_shape(x.sizes(), mask, false), contiguous_strides(reduced_shape(x.sizes(), mask, false)), 0);
  if (needs_grad({x}))
    record("SumBackward", {x}, {out}, [in_shape = x.sizes(), kept = reduced_shape(x.sizes(), mask, true)](
                                          const std::vector<Tensor>& g) {
      return std::vector<Tensor>{expand(reshape(g[0], kept), in_shape)};
    });
  return out;
}

Tensor sum_to(const Tensor& g, const Shape& shape) {
  if (g.sizes() == shape) return g;
  const int64_t lead = g.dim() - int64_t(shape.size());
  KS_CHECK(lead >= 0, "sum_to: cannot reduce ", describe(g), " to ", shape);
  Dims dims;
  for (int64_t d = 0; d < g.dim(); ++d) {
    if (d < lead) { dims.push_back(d); continue; }
    int64_t want = shape[size_t(d - lead)];
    if (want == g.size(d)) continue;
    KS_CHECK(want == 1, "sum_to: cannot reduce ", describe(g), " to ", shape);
    dims.push_back(d);
  }
  if (dims.empty()) return reshape(g, shape);
  return reshape(sum(g, dims, true), shape);
}

}  // namespace ks
