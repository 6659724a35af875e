// autograd/grad_accumulate.cpp — checks around the gradient-sum kernel, and
// when a gradient may be summed into or kept without a copy.
#include "autograd/grad_accumulate.h"

#include "autograd/node.h"

namespace ks {

constinit KernelTable<GradAddKernel> grad_add_kernel("grad_add");

namespace {
void check_same(const Tensor& a, const Tensor& b) {
  KS_CHECK(a.sizes() == b.sizes() && a.dtype() == b.dtype() && a.device() == b.device(),
           "backward: cannot sum gradients ", describe(a), " and ", describe(b),
           " (a backward function returned a gradient of the wrong shape or dtype)");
}
}  // namespace

void grad_accumulate_(const Tensor& acc, const Tensor& g) {
  check_same(acc, g);
  if (acc.numel()) grad_add_kernel(acc.device(), acc, acc, g);
  acc.bump_version();
}

Tensor grad_sum(const Tensor& a, const Tensor& b) {
  check_same(a, b);
  Tensor out = Tensor::empty(a.sizes(), a.dtype(), a.device());
  if (out.numel()) grad_add_kernel(out.device(), out, a, b);
  if (needs_grad({a, b}))  // a backward with create_graph: the sum is part of the new graph
    record(
        "GradSumBackward", {a, b}, {out},
        [](const std::vector<Tensor>& g) {
          return std::vector<Tensor>{g[0], g[0]};
        },
        HigherOrder::Supported);
  return out;
}

bool unshared_dense(const Tensor& t) {
  const TensorImpl* impl = t.impl();
  return t.impl_ptr().use_count() == 1 && impl->storage.use_count() == 1 && impl->version.use_count() == 1 &&
         impl->grad_fn == nullptr && !impl->requires_grad && t.storage_offset() == 0 && t.is_contiguous() &&
         impl->storage->nbytes() == size_t(t.numel()) * t.element_size();
}

}  // namespace ks
