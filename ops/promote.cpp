// ops/promote.cpp — casting two operands to their common dtype (ops/promote.h).
#include "ops/promote.h"

#include "core/type_promotion.h"
#include "ops/view.h"

namespace ks {

std::pair<Tensor, Tensor> promoted(const char* op, const Tensor& a, const Tensor& b) {
  KS_CHECK(a.defined() && b.defined(), op, ": undefined input");
  KS_CHECK(a.device() == b.device(), op, ": device mismatch, ", describe(a), " and ", describe(b));
  if (a.dtype() == b.dtype()) return {a, b};
  const DType r = result_type(a.dtype(), a.dim() > 0, b.dtype(), b.dim() > 0);
  return {to(a, r), to(b, r)};
}

}  // namespace ks
