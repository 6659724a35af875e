// ops/promote.h — type promotion applied: the operands of a two-tensor op
// cast (differentiably) to their result_type (core/type_promotion.h) before
// the op's own checks, so the kernels still see one dtype.
// Not here: the promotion rules (core/type_promotion.h).
#pragma once

#include <utility>

#include "core/tensor.h"

namespace ks {

// a and b as result_type(a, b); either unchanged when it already is. Checks
// that both are defined and on one device (errors name `op`).
std::pair<Tensor, Tensor> promoted(const char* op, const Tensor& a, const Tensor& b);

}  // namespace ks
