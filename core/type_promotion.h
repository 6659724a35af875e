// core/type_promotion.h — which dtype an op on two tensors of different
// dtypes computes in: PyTorch's type promotion, so `int64 + float32`,
// `bfloat16 + float32` and `float32 + 0-dim float64` mean what a PyTorch user
// expects.
//
// Categories rank bool < integer < floating. Two dtypes promote to the
// smallest one that holds both (int32·int64 → int64, float32·float64 →
// float64, bfloat16·float16 → float32, any integer·float32 → float32). Among
// tensors, those with dims decide; a 0-dim tensor counts only where its
// category is higher (float32 [n] + float64 [] → float32, int64 [n] +
// float64 [] → float64), as PyTorch treats 0-dim tensors.
// Not here: applying it (ops/promote.h casts the operands), scalars given as
// C++ numbers (the scalar overloads keep the tensor's dtype), in-place ops
// (they keep their target's dtype and refuse a wider operand).
#pragma once

#include "core/dtype.h"

namespace ks {

DType promote_types(DType a, DType b);
// The dtype an op on a and b computes in, from their dtypes and whether each
// has dims (rank > 0).
DType result_type(DType a, bool a_has_dims, DType b, bool b_has_dims);

}  // namespace ks
