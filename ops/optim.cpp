// ops/optim.cpp — checks around the fused optimizer kernels.
#include "ops/optim.h"

#include "core/copy.h"

namespace ks {

constinit KernelTable<AdamKernel> adam_kernel("adam_update");
constinit KernelTable<SgdKernel> sgd_kernel("sgd_update");
constinit KernelTable<ScaleKernel> scale_kernel("scale_");
constinit KernelTable<SumSquaresKernel> sum_squares_kernel("sum_of_squares");

namespace {
// `other` has p's shape and device, and p's dtype (or `dtype`, where given: bfloat16 moments).
void check_state(const char* op, const Tensor& p, const Tensor& other, const char* what, DType dtype = DType::Float32,
                 bool own_dtype = false) {
  KS_CHECK(
      other.sizes() == p.sizes() && other.dtype() == (own_dtype ? dtype : p.dtype()) && other.device() == p.device(),
      op, ": ", what, " ", describe(other), " does not match parameter ", describe(p));
  KS_CHECK(other.is_contiguous(), op, ": ", what, " must be contiguous, got strides ", other.strides());
}
}  // namespace

void adam_update_(const Tensor& p, const Tensor& g, const Tensor& m, const Tensor& v, const AdamHyper& h) {
  KS_CHECK(is_floating(p.dtype()) && p.is_contiguous(),
           "adam_update_: parameter must be a contiguous float tensor, got ", describe(p));
  check_state("adam_update_", p, g, "gradient");
  // Moments in bfloat16 under float32 parameters (optimizer.state_dtype bf16), or in p's dtype.
  const bool bf16_state = p.dtype() == kFloat32 && m.dtype() == kBFloat16;
  check_state("adam_update_", p, m, "exp_avg", kBFloat16, bf16_state);
  check_state("adam_update_", p, v, "exp_avg_sq", kBFloat16, bf16_state);
  KS_CHECK(h.step >= 1, "adam_update_: step must be >= 1, got ", h.step);
  adam_kernel(p.device(), p, g, m, v, h);
  p.bump_version();
  m.bump_version();
  v.bump_version();
}

void sgd_update_(const Tensor& p, const Tensor& g, const Tensor& buf, const SgdHyper& h) {
  KS_CHECK(is_floating(p.dtype()) && p.is_contiguous(),
           "sgd_update_: parameter must be a contiguous float tensor, got ", describe(p));
  check_state("sgd_update_", p, g, "gradient");
  if (h.momentum != 0) check_state("sgd_update_", p, buf, "momentum buffer");
  sgd_kernel(p.device(), p, g, buf, h);
  p.bump_version();
  if (h.momentum != 0) buf.bump_version();
}

void scale_(const Tensor& t, double s) {
  KS_CHECK(is_floating(t.dtype()) && t.is_contiguous(), "scale_: needs a contiguous float tensor, got ", describe(t));
  scale_kernel(t.device(), t, s);
  t.bump_version();
}

double sum_of_squares(const Tensor& t) {
  KS_CHECK(is_floating(t.dtype()), "sum_of_squares: needs a float tensor, got ", describe(t));
  Tensor c = contiguous_raw(t);
  return c.numel() ? sum_squares_kernel(c.device(), c) : 0.0;
}

}  // namespace ks
