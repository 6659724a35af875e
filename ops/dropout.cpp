// ops/dropout.cpp — dropout: argument checks, generator bookkeeping and the
// backward node (the kernel, or under create_graph the same product with the
// saved mask in differentiable ops); the loops are in cpu/dropout.cpp.
#include "ops/dropout.h"

#include "autograd/node.h"
#include "core/factory.h"
#include "ops/elementwise.h"
#include "ops/view.h"

namespace ks {

constinit KernelTable<DropoutKernel> dropout_kernel("dropout");
constinit KernelTable<DropoutBackwardKernel> dropout_backward_kernel("dropout_backward");

uint64_t reserve_dropout_blocks(int64_t n, Generator& g) {
  constexpr int64_t kPerBlock = 4;  // the draws of one block, every dtype
  KS_ASSERT(random_values_per_block(RandomKind::Bernoulli, kFloat32) == kPerBlock &&
            random_values_per_block(RandomKind::Bernoulli, kFloat64) == kPerBlock);
  return g.reserve(uint64_t((n + kPerBlock - 1) / kPerBlock));
}

Tensor dropout(const Tensor& x, double p, bool training, Generator* gen) {
  KS_CHECK(x.defined(), "dropout: undefined input");
  KS_CHECK(p >= 0 && p <= 1, "dropout: p must be in [0, 1], got ", p);
  KS_CHECK(is_floating(x.dtype()), "dropout: expected a floating tensor, got ", describe(x));
  if (!training || p == 0) return x;

  Generator& g = gen ? *gen : default_generator();
  const uint64_t first_block = reserve_dropout_blocks(x.numel(), g);
  const double scale = p < 1 ? 1.0 / (1.0 - p) : 0.0;
  Tensor out = Tensor::empty(x.sizes(), x.dtype(), x.device());
  Tensor mask = Tensor::empty(x.sizes(), kBool, x.device());
  dropout_kernel(out.device(), out, mask, x, 1.0 - p, scale, g.seed(), first_block);
  if (needs_grad({x}))
    record(
        "DropoutBackward", {x}, {out},
        [smask = SavedTensor(mask), scale](const std::vector<Tensor>& grads) {
          const Tensor& gy = grads[0];
          if (GradMode::is_enabled())  // create_graph: g · mask · scale
            return std::vector<Tensor>{mul(gy, mul(to(smask.unpack(), gy.dtype()), scale))};
          Tensor dx = Tensor::empty(gy.sizes(), gy.dtype(), gy.device());
          dropout_backward_kernel(dx.device(), dx, gy, smask.unpack(), scale);
          return std::vector<Tensor>{dx};
        },
        HigherOrder::Supported);
  return out;
}

}  // namespace ks
