// ops/rope.cpp — rope: argument checks and the backward node; the kernel is
// ops/rope_formulas.h (cpu/rope.cpp, cuda/rope.cu).
#include "ops/rope.h"

#include "autograd/node.h"
#include "core/copy.h"

namespace ks {

constinit KernelTable<RopeKernel> rope_kernel("rope");

Tensor rope(const Tensor& x, const RopeOptions& opt) {
  KS_CHECK(x.defined(), "rope: undefined input");
  KS_CHECK(is_floating(x.dtype()), "rope: expected a floating tensor, got ", describe(x));
  KS_CHECK(x.dim() >= 2, "rope: expected x (..., T, p), got ", describe(x));
  const int64_t p = x.size(-1), T = x.size(-2);
  KS_CHECK(p % 2 == 0, "rope: the last dim (the head size) must be even to pair i with i + p/2, got ", describe(x));
  KS_CHECK(opt.theta > 0, "rope: theta must be > 0, got ", opt.theta);
  RopeGeometry g{.T = T, .p = p, .offset = opt.offset, .theta = opt.theta, .sign = opt.inverse ? -1.0 : 1.0};
  g.batch = x.dim() > 2 ? x.size(0) : 1;
  g.per_batch = x.numel() == 0 ? 0 : x.numel() / (g.batch * T * p);  // the rows of one batch entry at one t
  Tensor positions;
  if (opt.positions.defined()) {
    const Tensor& pos = opt.positions;
    KS_CHECK(pos.dtype() == kInt64 && pos.device() == x.device(), "rope: positions must be int64 on ", x.device().str(),
             ", got ", describe(pos));
    const bool per_row = pos.dim() == 1 && pos.size(0) == T;
    const bool per_batch = pos.dim() == 2 && x.dim() > 2 && pos.size(0) == x.size(0) && pos.size(1) == T;
    KS_CHECK(per_row || per_batch, "rope: positions must be (T,) or (B, T) with T = ", T,
             x.dim() > 2 ? str(", B = ", x.size(0)) : std::string(), ", got ", describe(pos), " for x ", describe(x));
    positions = contiguous_raw(pos);
  }
  Tensor y = Tensor::empty(x.sizes(), x.dtype(), x.device());
  rope_kernel(y.device(), y, x, positions, g);

  if (needs_grad({x})) {
    // Linear in x, and the rotation's transpose is the turn by −angle: nothing of x is saved.
    RopeOptions back = opt;
    back.positions = positions;
    back.inverse = !opt.inverse;
    record(
        "RopeBackward", {x}, {y},
        [back](const std::vector<Tensor>& grads) { return std::vector<Tensor>{rope(grads[0], back)}; },
        HigherOrder::Supported);
  }
  return y;
}

}  // namespace ks
