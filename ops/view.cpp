// ops/view.cpp — view geometry (sizes/strides/offset) and view backwards.
#include "ops/view.h"

#include <algorithm>
#include <optional>

#include "autograd/node.h"
#include "core/copy.h"
#include "core/factory.h"
#include "ops/reduce.h"

namespace ks {
namespace {

// Records that `out` is a view (or copy) of `x` whose gradient is backward(g):
// every backward here is made of views and ops, so it is differentiable again.
template <class F> Tensor with_grad(const char* name, const Tensor& x, Tensor out, F backward) {
  if (needs_grad({x}))
    record(
        name, {x}, {out}, [backward](const std::vector<Tensor>& g) { return std::vector<Tensor>{backward(g[0])}; },
        HigherOrder::Supported);
  return out;
}

// g written into zeros of shape `in` at slice(d, start, end, step): the
// backward of slice and select, as an op whose own backward is that slice.
Tensor slice_backward(const Tensor& g, const Shape& in, int64_t d, int64_t start, int64_t end, int64_t step) {
  Tensor gx = zeros(in, {.dtype = g.dtype(), .device = g.device()});
  copy_(slice(gx, d, start, end, step), g);
  return with_grad("SliceBackwardBackward", g, gx,
                   [d, start, end, step](const Tensor& gg) { return slice(gg, d, start, end, step); });
}

Tensor make_view(const Tensor& x, Shape sizes, Shape strides, int64_t offset) {
  return x.alias(std::move(sizes), std::move(strides), offset);
}

Shape infer_shape(Shape shape, int64_t numel, const char* op) {
  int64_t infer = -1, known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      KS_CHECK(infer < 0, op, ": only one dimension can be -1 in ", shape);
      infer = int64_t(i);
    } else {
      KS_CHECK(shape[i] >= 0, op, ": invalid size ", shape[i], " in ", shape);
      known *= shape[i];
    }
  }
  if (infer >= 0) {
    KS_CHECK(known != 0 && numel % known == 0, op, ": shape ", shape, " is invalid for ", numel, " elements");
    shape[size_t(infer)] = numel / known;
  }
  KS_CHECK(numel_of(shape) == numel, op, ": shape ", shape, " is invalid for ", numel, " elements");
  return shape;
}

// Strides giving `shape` over x's memory without a copy, if any (PyTorch's
// computeStride): each run of old dims that is contiguous in memory may be
// re-split into any new dims of the same total size.
std::optional<Shape> view_strides(const Shape& old_sizes, const Shape& old_strides, const Shape& shape) {
  Shape out(shape.size());
  if (old_sizes.empty()) {
    std::fill(out.begin(), out.end(), 1);
    return out;
  }
  if (numel_of(old_sizes) == 0) return contiguous_strides(shape);
  int64_t view_d = int64_t(shape.size()) - 1;
  int64_t chunk_base_stride = old_strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t d = int64_t(old_sizes.size()) - 1; d >= 0; --d) {
    tensor_numel *= old_sizes[size_t(d)];
    if (d == 0 || (old_sizes[size_t(d - 1)] != 1 && old_strides[size_t(d - 1)] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || shape[size_t(view_d)] == 1)) {
        out[size_t(view_d)] = view_numel * chunk_base_stride;
        view_numel *= shape[size_t(view_d)];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (d > 0) {
        chunk_base_stride = old_strides[size_t(d - 1)];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return out;
}

}  // namespace

Tensor view(const Tensor& x, Shape shape) {
  shape = infer_shape(std::move(shape), x.numel(), "view");
  auto strides = view_strides(x.sizes(), x.strides(), shape);
  KS_CHECK(strides.has_value(), "view: cannot view ", describe(x), " with strides ", x.strides(), " as ", shape,
           " without a copy; use reshape");
  Tensor out = make_view(x, shape, *strides, x.storage_offset());
  return with_grad("ViewBackward", x, out, [in = x.sizes()](const Tensor& g) { return reshape(g, in); });
}

Tensor reshape(const Tensor& x, Shape shape) {
  shape = infer_shape(std::move(shape), x.numel(), "reshape");
  if (view_strides(x.sizes(), x.strides(), shape)) return view(x, shape);
  return view(contiguous(x), shape);
}

Tensor flatten(const Tensor& x, int64_t start_dim, int64_t end_dim) {
  if (x.dim() == 0) return reshape(x, {1});
  int64_t s = wrap_dim(start_dim, x.dim(), "flatten"), e = wrap_dim(end_dim, x.dim(), "flatten");
  KS_CHECK(s <= e, "flatten: start_dim ", start_dim, " comes after end_dim ", end_dim);
  Shape shape(x.sizes().begin(), x.sizes().begin() + s);
  int64_t n = 1;
  for (int64_t d = s; d <= e; ++d) n *= x.size(d);
  shape.push_back(n);
  shape.insert(shape.end(), x.sizes().begin() + e + 1, x.sizes().end());
  return reshape(x, shape);
}

Tensor transpose(const Tensor& x, int64_t dim0, int64_t dim1) {
  if (x.dim() == 0)
    return with_grad("TransposeBackward", x, make_view(x, {}, {}, x.storage_offset()),
                     [](const Tensor& g) { return g; });
  int64_t a = wrap_dim(dim0, x.dim(), "transpose"), b = wrap_dim(dim1, x.dim(), "transpose");
  Shape sizes = x.sizes(), strides = x.strides();
  std::swap(sizes[size_t(a)], sizes[size_t(b)]);
  std::swap(strides[size_t(a)], strides[size_t(b)]);
  Tensor out = make_view(x, sizes, strides, x.storage_offset());
  return with_grad("TransposeBackward", x, out, [a, b](const Tensor& g) { return transpose(g, a, b); });
}

Tensor permute(const Tensor& x, const std::vector<int64_t>& dims) {
  KS_CHECK(int64_t(dims.size()) == x.dim(), "permute: got ", dims.size(), " dims ", dims, " for a ", x.dim(),
           "-d tensor");
  Shape sizes(dims.size()), strides(dims.size());
  std::vector<int64_t> inverse(dims.size(), -1);
  for (size_t i = 0; i < dims.size(); ++i) {
    int64_t d = wrap_dim(dims[i], x.dim(), "permute");
    KS_CHECK(inverse[size_t(d)] < 0, "permute: dim ", d, " repeated in ", dims);
    inverse[size_t(d)] = int64_t(i);
    sizes[i] = x.size(d);
    strides[i] = x.stride(d);
  }
  Tensor out = make_view(x, sizes, strides, x.storage_offset());
  return with_grad("PermuteBackward", x, out, [inverse](const Tensor& g) { return permute(g, inverse); });
}

Tensor slice(const Tensor& x, int64_t dim, int64_t start, int64_t end, int64_t step) {
  KS_CHECK(x.dim() > 0, "slice: cannot slice a 0-d tensor");
  int64_t d = wrap_dim(dim, x.dim(), "slice");
  KS_CHECK(step > 0, "slice: step must be positive, got ", step);
  const int64_t n = x.size(d);
  if (start < 0) start += n;
  if (end < 0) end += n;
  start = std::clamp<int64_t>(start, 0, n);
  end = std::clamp<int64_t>(end, start, n);
  Shape sizes = x.sizes(), strides = x.strides();
  sizes[size_t(d)] = (end - start + step - 1) / step;
  strides[size_t(d)] *= step;
  Tensor out = make_view(x, sizes, strides, x.storage_offset() + start * x.stride(d));
  return with_grad("SliceBackward", x, out, [in = x.sizes(), d, start, end, step](const Tensor& g) {
    return slice_backward(g, in, d, start, end, step);
  });
}

Tensor narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length) {
  KS_CHECK(x.dim() > 0, "narrow: cannot narrow a 0-d tensor");
  int64_t d = wrap_dim(dim, x.dim(), "narrow");
  if (start < 0) start += x.size(d);
  KS_CHECK(start >= 0 && length >= 0 && start + length <= x.size(d), "narrow: range [", start, ", ", start + length,
           ") is out of bounds for dim ", dim, " of ", describe(x));
  return slice(x, d, start, start + length, 1);
}

Tensor select(const Tensor& x, int64_t dim, int64_t index) {
  KS_CHECK(x.dim() > 0, "select: cannot select from a 0-d tensor");
  int64_t d = wrap_dim(dim, x.dim(), "select");
  const int64_t n = x.size(d);
  KS_CHECK(index >= -n && index < n, "select: index ", index, " is out of bounds for dim ", dim, " of size ", n);
  if (index < 0) index += n;
  Shape sizes = x.sizes(), strides = x.strides();
  int64_t offset = x.storage_offset() + index * strides[size_t(d)];
  sizes.erase(sizes.begin() + d);
  strides.erase(strides.begin() + d);
  Tensor out = make_view(x, sizes, strides, offset);
  return with_grad("SelectBackward", x, out, [in = x.sizes(), d, index](const Tensor& g) {
    return slice_backward(unsqueeze(g, d), in, d, index, index + 1, 1);
  });
}

Tensor squeeze(const Tensor& x) {
  Shape sizes, strides;
  for (int64_t d = 0; d < x.dim(); ++d)
    if (x.size(d) != 1) {
      sizes.push_back(x.size(d));
      strides.push_back(x.stride(d));
    }
  Tensor out = make_view(x, sizes, strides, x.storage_offset());
  return with_grad("SqueezeBackward", x, out, [in = x.sizes()](const Tensor& g) { return reshape(g, in); });
}

Tensor squeeze(const Tensor& x, int64_t dim) {
  if (x.dim() == 0) return squeeze(x);
  int64_t d = wrap_dim(dim, x.dim(), "squeeze");
  if (x.size(d) != 1)
    return with_grad("SqueezeBackward", x, make_view(x, x.sizes(), x.strides(), x.storage_offset()),
                     [](const Tensor& g) { return g; });
  Shape sizes = x.sizes(), strides = x.strides();
  sizes.erase(sizes.begin() + d);
  strides.erase(strides.begin() + d);
  Tensor out = make_view(x, sizes, strides, x.storage_offset());
  return with_grad("SqueezeBackward", x, out, [in = x.sizes()](const Tensor& g) { return reshape(g, in); });
}

Tensor unsqueeze(const Tensor& x, int64_t dim) {
  int64_t d = wrap_dim(dim, x.dim() + 1, "unsqueeze");
  Shape sizes = x.sizes(), strides = x.strides();
  int64_t st = d < x.dim() ? x.stride(d) * x.size(d) : 1;
  sizes.insert(sizes.begin() + d, 1);
  strides.insert(strides.begin() + d, st);
  Tensor out = make_view(x, sizes, strides, x.storage_offset());
  return with_grad("UnsqueezeBackward", x, out, [in = x.sizes()](const Tensor& g) { return reshape(g, in); });
}

Tensor expand(const Tensor& x, const Shape& shape_in) {
  const int64_t nd = int64_t(shape_in.size()), xd = x.dim();
  KS_CHECK(nd >= xd, "expand: cannot expand ", describe(x), " to fewer dims ", shape_in);
  Shape shape = shape_in, strides(size_t(nd), 0);
  for (int64_t i = 0; i < nd; ++i) {
    int64_t xi = i - (nd - xd);
    if (xi < 0) {
      KS_CHECK(shape[size_t(i)] >= 0, "expand: -1 is not allowed for the new leading dim ", i, " in ", shape_in);
      continue;
    }
    int64_t have = x.size(xi);
    if (shape[size_t(i)] == -1) shape[size_t(i)] = have;
    if (shape[size_t(i)] == have)
      strides[size_t(i)] = x.stride(xi);
    else
      KS_CHECK(have == 1, "expand: cannot expand ", describe(x), " to ", shape_in, " (dim ", i, ": ", have, " vs ",
               shape[size_t(i)], ")");
  }
  Tensor out = make_view(x, shape, strides, x.storage_offset());
  return with_grad("ExpandBackward", x, out, [in = x.sizes()](const Tensor& g) { return sum_to(g, in); });
}

Tensor contiguous(const Tensor& x) {
  if (x.is_contiguous()) return x;
  return clone(x);
}

Tensor clone(const Tensor& x) {
  Tensor out = Tensor::empty(x.sizes(), x.dtype(), x.device());
  copy_(out, x);
  return with_grad("CloneBackward", x, out, [](const Tensor& g) { return g; });
}

Tensor to(const Tensor& x, Device device) {
  if (x.device() == device) return x;
  Tensor out = Tensor::empty(x.sizes(), x.dtype(), device);
  copy_(out, x);
  return with_grad("ToDeviceBackward", x, out, [src = x.device()](const Tensor& g) { return to(g, src); });
}

Tensor to(const Tensor& x, DType dtype) {
  if (x.dtype() == dtype) return x;
  Tensor out = Tensor::empty(x.sizes(), dtype, x.device());
  copy_(out, x);
  if (!is_floating(dtype)) return out;  // integer results carry no gradient
  return with_grad("ToDTypeBackward", x, out, [src = x.dtype()](const Tensor& g) { return to(g, src); });
}

Tensor flat_window(const Tensor& flat, int64_t offset, const Tensor& like) {
  KS_CHECK(offset >= 0 && offset + like.numel() <= flat.numel(), "flat_window: elements ", offset, "..",
           offset + like.numel(), " exceed the buffer's ", flat.numel());
  return flat.alias(like.sizes(), contiguous_strides(like.sizes()), flat.storage_offset() + offset);
}

}  // namespace ks
