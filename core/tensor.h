// core/tensor.h — Tensor, the cheap handle everybody passes around.
//
// A Tensor is a shared_ptr to a TensorImpl: copying a Tensor copies a pointer,
// never data. This header gives metadata, raw element access and the autograd
// fields. It does not compute: arithmetic, views that must be differentiable
// (transpose, reshape, ...) and copies with gradients are operators in ops/.
// Factory functions (zeros, randn, ...) are in core/factory.h.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/hook_handle.h"
#include "core/tensor_impl.h"

namespace ks {

// Product of sizes; 1 for a 0-dim (scalar) shape.
int64_t numel_of(const Shape& sizes);
// Row-major (C order) strides for sizes.
Shape contiguous_strides(const Shape& sizes);
// Maps a possibly negative dim into [0, ndim); throws naming `op` if out of range.
int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op);

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  // A new, uninitialised, contiguous tensor.
  static Tensor empty(const Shape& sizes, DType dtype, Device device);

  bool defined() const { return impl_ != nullptr; }
  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }
  bool is_same(const Tensor& o) const { return impl_ == o.impl_; }

  // --- metadata ---
  const Shape& sizes() const { return checked()->sizes; }
  const Shape& strides() const { return checked()->strides; }
  int64_t size(int64_t dim) const;  // negative dims count from the end
  int64_t stride(int64_t dim) const;
  int64_t dim() const { return static_cast<int64_t>(sizes().size()); }
  int64_t numel() const { return numel_of(sizes()); }
  DType dtype() const { return checked()->dtype; }
  Device device() const { return checked()->storage->device(); }
  int64_t storage_offset() const { return checked()->offset; }
  size_t element_size() const { return itemsize(dtype()); }
  bool is_contiguous() const;
  // True if no two indices address the same element (no stride-0 broadcast dims).
  bool is_non_overlapping() const;

  // --- raw data (no autograd; for kernels, tests and I/O) ---
  // Pointer to element (0, ..., 0), i.e. storage data + offset.
  void* data_ptr() const;
  template <class T> T* data() const {
    KS_CHECK(dtype_of<T>() == dtype(), "data<", name(dtype_of<T>()), ">: tensor has dtype ", name(dtype()));
    return static_cast<T*>(data_ptr());
  }
  // The single value of a one-element tensor, converted to T (copies from the device if needed).
  template <class T> T item() const;
  double item() const { return item<double>(); }
  // All elements in logical (row-major) order, converted to T; from any device.
  template <class T> std::vector<T> to_vector() const;

  // A tensor over the same storage with other geometry, sharing the version
  // counter. No autograd history: differentiable views are in ops/view.h.
  Tensor alias(Shape sizes, Shape strides, int64_t offset) const;

  // Makes this tensor (and every handle to it) refer to `value`'s storage and
  // geometry, keeping its identity and autograd flags; drops a stale .grad.
  // For moving parameters between devices/dtypes in place (Module::to).
  void set_data(const Tensor& value) const;

  // --- autograd fields (their logic is in autograd/) ---
  bool requires_grad() const { return checked()->requires_grad || checked()->grad_fn != nullptr; }
  // Marks a leaf as a parameter whose gradient is wanted; floating dtypes only.
  Tensor& set_requires_grad(bool on);
  bool is_leaf() const { return checked()->grad_fn == nullptr; }
  const std::shared_ptr<Node>& grad_fn() const { return checked()->grad_fn; }
  Tensor grad() const { return Tensor(checked()->grad); }
  void set_grad(const Tensor& g) const { checked()->grad = g.impl_; }
  uint64_t version() const { return checked()->version->value.load(); }
  // Runs `hook` on this tensor's gradient whenever backward computes it; a
  // hook may return a replacement (same shape) or an undefined Tensor (keep
  // the gradient). Leaf or not. Defined in autograd/hooks.cpp.
  HookHandle register_hook(std::function<Tensor(const Tensor& grad)> hook) const;
  // Keeps this non-leaf tensor's gradient in .grad (accumulating, as a
  // leaf's); a no-op on a leaf. Defined in autograd/hooks.cpp.
  void retain_grad() const;
  // Called by every in-place op: invalidates tensors saved for backward.
  void bump_version() const { checked()->version->value.fetch_add(1); }

  // --- printing, like PyTorch: tensor([[1.0000, 2.0000]], dtype=float64) ---
  std::string to_string() const;

 private:
  TensorImpl* checked() const {
    KS_CHECK(impl_, "use of an undefined (default-constructed) Tensor");
    return impl_.get();
  }
  std::shared_ptr<TensorImpl> impl_;
};

std::ostream& operator<<(std::ostream& os, const Tensor& t);

// "float32 [2, 3]" — for error messages.
std::string describe(const Tensor& t);

}  // namespace ks

#include "core/tensor_inl.h"
