// core/tensor_impl.h — what a tensor is: a strided window on shared storage.
//
// element(i0, i1, ...) lives at storage.data + (offset + Σ i_k * strides[k]) * itemsize.
// Views (transpose, slice, expand, ...) are new TensorImpls over the same
// Storage with other sizes/strides/offset; they also share the version
// counter, so writing through any view marks every tensor saved for backward
// from that storage as stale.
//
// The autograd fields live here (so a Tensor handle is all a user holds), but
// their meaning belongs to autograd/: core only stores them. Node is opaque here.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "core/dtype.h"
#include "core/storage.h"

namespace ks {

using Shape = std::vector<int64_t>;

class Node;    // autograd/node.h
class Tensor;  // core/tensor.h

struct VersionCounter {
  std::atomic<uint64_t> value{0};
};

struct TensorImpl {
  Storage storage;
  Shape sizes;
  Shape strides;       // in elements, may be 0 (expanded) or any order (permuted)
  int64_t offset = 0;  // in elements
  DType dtype = DType::Float32;
  std::shared_ptr<VersionCounter> version = std::make_shared<VersionCounter>();

  // Autograd (see autograd/README.md).
  bool requires_grad = false;            // set by the user on leaves
  std::shared_ptr<TensorImpl> grad;      // accumulated gradient of a leaf
  std::shared_ptr<Node> grad_fn;         // the node that made this tensor; null for leaves
  uint32_t output_nr = 0;                // which output of grad_fn this is
  std::weak_ptr<Node> grad_accumulator;  // a leaf's AccumulateGrad node, shared by its uses
  // Called, in order, once the leaf's .grad has taken a backward's gradient
  // (autograd/hooks.h); each with its id for removal.
  std::vector<std::pair<uint64_t, std::function<void(const Tensor&)>>> post_accumulate_hooks;
  // A leaf's gradient hooks (Tensor::register_hook), run before accumulation;
  // a non-leaf's live on its grad_fn, which outlives the handle.
  std::vector<std::pair<uint64_t, std::function<Tensor(const Tensor&)>>> grad_hooks;
};

}  // namespace ks
