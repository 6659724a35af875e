// core/tensor.cpp — Tensor metadata, aliasing and the autograd flag checks.
#include "core/tensor.h"

#include <algorithm>

namespace ks {

int64_t numel_of(const Shape& sizes) {
  // Shapes come from files and configs too: a wrapped product would "match"
  // a small buffer, so every step is checked (a zero size makes any shape empty).
  int64_t n = 1;
  bool overflow = false, empty = false;
  for (int64_t s : sizes) {
    KS_CHECK(s >= 0, "numel: negative size in shape ", sizes);
    overflow |= __builtin_mul_overflow(n, s, &n);
    empty |= s == 0;
  }
  if (empty) return 0;
  KS_CHECK(!overflow, "numel: shape ", sizes, " has more than 2^63 elements");
  return n;
}

Shape contiguous_strides(const Shape& sizes) {
  Shape st(sizes.size());
  int64_t acc = 1;
  for (int64_t d = int64_t(sizes.size()) - 1; d >= 0; --d) {
    st[d] = acc;
    // Only an empty shape ([2^40, 2^40, 0]) can overflow here (numel_of checks
    // the others); its strides are never followed, so saturate.
    if (__builtin_mul_overflow(acc, std::max<int64_t>(sizes[d], 1), &acc)) acc = INT64_MAX;
  }
  return st;
}

int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op) {
  int64_t n = std::max<int64_t>(ndim, 1);  // a scalar accepts dim 0 and -1
  KS_CHECK(dim >= -n && dim < n, op, ": dim ", dim, " out of range for a ", ndim, "-d tensor");
  return dim < 0 ? dim + n : dim;
}

Tensor Tensor::empty(const Shape& sizes, DType dtype, Device device) {
  for (int64_t s : sizes) KS_CHECK(s >= 0, "empty: negative size in shape ", sizes);
  size_t nbytes = 0;
  KS_CHECK(!__builtin_mul_overflow(size_t(numel_of(sizes)), itemsize(dtype), &nbytes), "empty: shape ", sizes, " of ",
           itemsize(dtype), "-byte elements needs more than 2^64 bytes");
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = make_storage(nbytes, device);
  impl->sizes = sizes;
  impl->strides = contiguous_strides(sizes);
  impl->dtype = dtype;
  return Tensor(std::move(impl));
}

int64_t Tensor::size(int64_t d) const { return sizes()[wrap_dim(d, dim(), "size")]; }
int64_t Tensor::stride(int64_t d) const { return strides()[wrap_dim(d, dim(), "stride")]; }

bool Tensor::is_contiguous() const {
  if (numel() == 0) return true;  // no element to misplace
  const Shape& sz = sizes();
  const Shape& st = strides();
  int64_t expected = 1;
  for (int64_t d = int64_t(sz.size()) - 1; d >= 0; --d) {
    if (sz[d] == 1) continue;
    if (st[d] != expected) return false;
    expected *= sz[d];
  }
  return true;
}

bool Tensor::is_non_overlapping() const {
  // Sort dims by stride; each must step past everything inside it.
  std::vector<std::pair<int64_t, int64_t>> dims;  // (stride, size)
  for (int64_t d = 0; d < dim(); ++d)
    if (sizes()[d] > 1) dims.emplace_back(strides()[d], sizes()[d]);
  std::sort(dims.begin(), dims.end());
  int64_t span = 1;
  for (auto [st, sz] : dims) {
    if (st < span) return false;
    span = st * sz;
  }
  return true;
}

void* Tensor::data_ptr() const {
  return static_cast<char*>(checked()->storage->data()) + checked()->offset * int64_t(element_size());
}

Tensor Tensor::alias(Shape sizes, Shape strides, int64_t offset) const {
  KS_ASSERT(sizes.size() == strides.size());
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = checked()->storage;
  impl->sizes = std::move(sizes);
  impl->strides = std::move(strides);
  impl->offset = offset;
  impl->dtype = dtype();
  impl->version = checked()->version;
  return Tensor(std::move(impl));
}

void Tensor::set_data(const Tensor& value) const {
  TensorImpl* self = checked();
  KS_CHECK(value.defined(), "set_data: undefined value");
  const bool same_geometry =
      self->sizes == value.sizes() && self->dtype == value.dtype() && self->storage->device() == value.device();
  self->storage = value.impl()->storage;
  self->sizes = value.sizes();
  self->strides = value.strides();
  self->offset = value.storage_offset();
  self->dtype = value.dtype();
  self->version = value.impl()->version;
  if (!same_geometry) self->grad.reset();
}

Tensor& Tensor::set_requires_grad(bool on) {
  KS_CHECK(is_leaf(), "set_requires_grad: only leaf tensors can be marked; this tensor was made by ",
           "an operation (use detach() to make a new leaf)");
  KS_CHECK(!on || is_floating(dtype()), "set_requires_grad: only floating tensors can require grad, got ",
           describe(*this));
  checked()->requires_grad = on;
  return *this;
}

std::string describe(const Tensor& t) {
  if (!t.defined()) return "undefined tensor";
  return str(name(t.dtype()), ' ', t.sizes(), t.device().is_cpu() ? "" : " on " + t.device().str());
}

}  // namespace ks
