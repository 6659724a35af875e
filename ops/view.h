// ops/view.h — differentiable views and copies.
//
// A view shares its input's storage (no data moves) and has its own sizes,
// strides and offset; writing through it writes the input. The backward of a
// view maps the gradient back onto the input's shape. `reshape` and
// `contiguous` copy only when the layout forces them to.
#pragma once

#include <vector>

#include "core/tensor.h"

namespace ks {

// Same elements, new shape; one size may be -1 (inferred). view throws when
// the strides cannot express the new shape without a copy; reshape copies then.
Tensor view(const Tensor& x, Shape shape);
Tensor reshape(const Tensor& x, Shape shape);
Tensor flatten(const Tensor& x, int64_t start_dim = 0, int64_t end_dim = -1);

Tensor transpose(const Tensor& x, int64_t dim0, int64_t dim1);
Tensor permute(const Tensor& x, const std::vector<int64_t>& dims);
// Elements [start, start + length) of dim.
Tensor narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length);
// Python-style x[..., start:end:step, ...] along dim; negative bounds count from the end.
Tensor slice(const Tensor& x, int64_t dim, int64_t start, int64_t end, int64_t step = 1);
// x[..., index, ...] along dim (the dim disappears).
Tensor select(const Tensor& x, int64_t dim, int64_t index);
Tensor squeeze(const Tensor& x);               // every size-1 dim
Tensor squeeze(const Tensor& x, int64_t dim);  // that dim, if its size is 1
Tensor unsqueeze(const Tensor& x, int64_t dim);
// Broadcast view to `shape` (-1 keeps a dim); stretched dims get stride 0.
Tensor expand(const Tensor& x, const Shape& shape);

// The contiguous window of a flat buffer `offset` elements in, shaped like
// `like`: how gradient buckets and ZeRO's gather buffers see one parameter
// (shares the buffer's storage; no autograd history).
Tensor flat_window(const Tensor& flat, int64_t offset, const Tensor& like);
// A contiguous tensor with x's values (x itself if already contiguous).
Tensor contiguous(const Tensor& x);
// A new tensor with a copy of x's values, keeping history.
Tensor clone(const Tensor& x);
// Copies to another device and/or dtype (x itself if nothing changes).
Tensor to(const Tensor& x, Device device);
Tensor to(const Tensor& x, DType dtype);

}  // namespace ks
