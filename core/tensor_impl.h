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
#include <memory>
#include <vector>

#include "core/dtype.h"
#include "core/storage.h"

namespace ks {

using Shape = std::vector<int64_t>;

class Node;  // autograd/node.h

struct VersionCounter {
  std::atomic<uint64_t> value{0};
};

struct TensorImpl {
  Storage storage;
  Shape sizes;
  Shape strides;          // in elements, may be 0 (expanded) or any order (permuted)
  int64_t offset = 0;     // in elements
  DType dtype = DType::Float32;
  std::shared_ptr<VersionCounter> version = std::make_shared<VersionCounter>();

  // Autograd (see autograd/README.md).
  bool requires_grad = false;              // set by the user on leaves
  std::shared_ptr<TensorImpl> grad;        // accumulated gradient of a leaf
  std::shared_ptr<Node> grad_fn;           // the node that made this tensor; null for leaves
  uint32_t output_nr = 0;                  // which output of grad_fn this is
  std::weak_ptr<Node> grad_accumulator;    // a leaf's AccumulateGrad node, shared by its uses
};

}  // namespace ks
