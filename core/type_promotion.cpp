// core/type_promotion.cpp — PyTorch's promotion table for Keystone's dtypes
// (core/type_promotion.h).
#include "core/type_promotion.h"

namespace ks {

namespace {

int category(DType t) { return t == DType::Bool ? 0 : is_floating(t) ? 2 : 1; }

}  // namespace

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  const int ca = category(a), cb = category(b);
  if (ca != cb) {
    // The higher category wins, at its own width: int64 + float32 -> float32; bool + int32 -> int32.
    return ca > cb ? a : b;
  }
  if (ca == 1) return DType::Int64;  // int32 and int64
  // Two floating types: the 16-bit pair has no common 16-bit type; otherwise the wider.
  if (itemsize(a) == 2 && itemsize(b) == 2) return DType::Float32;
  return itemsize(a) >= itemsize(b) ? a : b;
}

DType result_type(DType a, bool a_has_dims, DType b, bool b_has_dims) {
  if (a_has_dims == b_has_dims) return promote_types(a, b);
  const DType dims = a_has_dims ? a : b, zero = a_has_dims ? b : a;
  // A 0-dim tensor changes the result only from a higher category.
  return category(zero) > category(dims) ? promote_types(dims, zero) : dims;
}

}  // namespace ks
