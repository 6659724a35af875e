// ops/broadcast.h — NumPy broadcasting: the result shape of an elementwise op
// and the zero-stride views that line its operands up with it.
//
// Shapes are right-aligned; a dim of size 1 (or a missing dim) stretches to
// the other operand's size. [4, 1, 3] with [2, 1] gives [4, 2, 3].
#pragma once

#include <vector>

#include "core/tensor.h"

namespace ks {

// The broadcast shape of all inputs; throws naming `op` and the shapes if incompatible.
Shape broadcast_shapes(const std::vector<Shape>& shapes, const char* op);

// A view of t with t's elements laid over `shape` (stride 0 along stretched
// dims). No autograd: for kernels. Throws if t does not broadcast to shape.
Tensor broadcast_raw(const Tensor& t, const Shape& shape, const char* op);

// True if `from` broadcasts to exactly `to` (right-aligned, size-1 dims stretch).
bool broadcasts_to(const Shape& from, const Shape& to);

}  // namespace ks
