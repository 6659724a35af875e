// ops/dropout.cpp — dropout: argument checks, generator bookkeeping and the
// backward node; the loops are in cpu/dropout.cpp.
#include "ops/dropout.h"

#include "autograd/node.h"
#include "core/factory.h"

namespace ks {

constinit KernelTable<DropoutKernel> dropout_kernel("dropout");
constinit KernelTable<DropoutBackwardKernel> dropout_backward_kernel("dropout_backward");

Tensor dropout(const Tensor& x, double p, bool training, Generator* gen) {
  KS_CHECK(x.defined(), "dropout: undefined input");
  KS_CHECK(p >= 0 && p <= 1, "dropout: p must be in [0, 1], got ", p);
  KS_CHECK(is_floating(x.dtype()), "dropout: expected a floating tensor, got ", describe(x));
  if (!training || p == 0) return x;

  Generator& g = gen ? *gen : default_generator();
  const int64_t per_block = random_values_per_block(RandomKind::Bernoulli, x.dtype());
  const uint64_t first_block = g.reserve(uint64_t((x.numel() + per_block - 1) / per_block));
  const double scale = p < 1 ? 1.0 / (1.0 - p) : 0.0;
  Tensor out = Tensor::empty(x.sizes(), x.dtype(), x.device());
  Tensor mask = Tensor::empty(x.sizes(), kBool, x.device());
  dropout_kernel(out.device(), out, mask, x, 1.0 - p, scale, g.seed(), first_block);
  if (needs_grad({x}))
    record("DropoutBackward", {x}, {out}, [smask = SavedTensor(mask), scale](const std::vector<Tensor>& grads) {
      const Tensor& gy = grads[0];
      Tensor dx = Tensor::empty(gy.sizes(), gy.dtype(), gy.device());
      dropout_backward_kernel(dx.device(), dx, gy, smask.unpack(), scale);
      return std::vector<Tensor>{dx};
    });
  return out;
}

}  // namespace ks
