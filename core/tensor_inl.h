// core/tensor_inl.h — template bodies of Tensor's typed accessors.
// Included at the end of core/tensor.h; not meant to be included directly.
#pragma once

namespace ks {

// From core/copy.h (declared here because copy.h includes this header).
Tensor to_raw(const Tensor& t, Device device, DType dtype);

template <class T> T Tensor::item() const {
  KS_CHECK(numel() == 1, "item: expected a tensor with one element, got ", describe(*this));
  Tensor c = to_raw(*this, Device::cpu(), dtype());
  return dispatch_storage(dtype(), "item", [&](auto tag) -> T {
    using S = typename decltype(tag)::type;
    return convert<T>(*static_cast<const S*>(c.data_ptr()));
  });
}

template <class T> std::vector<T> Tensor::to_vector() const {
  Tensor c = to_raw(*this, Device::cpu(), dtype());
  std::vector<T> out(static_cast<size_t>(numel()));
  dispatch_storage(dtype(), "to_vector", [&](auto tag) {
    using S = typename decltype(tag)::type;
    const S* p = static_cast<const S*>(c.data_ptr());
    for (size_t i = 0; i < out.size(); ++i) out[i] = convert<T>(p[i]);
  });
  return out;
}

}  // namespace ks
