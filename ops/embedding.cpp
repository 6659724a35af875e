// ops/embedding.cpp — embedding: argument checks and the backward node; the
// gather and the deterministic scatter-add are in cpu/embedding.cpp.
#include "ops/embedding.h"

#include "autograd/node.h"
#include "core/factory.h"
#include "ops/compare.h"
#include "ops/elementwise.h"
#include "ops/indexing.h"
#include "ops/view.h"

namespace ks {

constinit KernelTable<EmbeddingKernel> embedding_kernel("embedding");
constinit KernelTable<EmbeddingBackwardKernel> embedding_backward_kernel("embedding_backward");

Tensor embedding(const Tensor& weight, const Tensor& indices, int64_t padding_idx) {
  KS_CHECK(weight.defined() && indices.defined(), "embedding: undefined input");
  KS_CHECK(weight.dim() == 2, "embedding: weight must be 2-D (num_embeddings, embedding_dim), got ", describe(weight));
  KS_CHECK(indices.dtype() == kInt64, "embedding: indices must be int64, got ", describe(indices));
  KS_CHECK(weight.device() == indices.device(), "embedding: weight is on ", weight.device().str(),
           " but indices are on ", indices.device().str());
  const int64_t V = weight.size(0), D = weight.size(1);
  KS_CHECK(padding_idx == -1 || (padding_idx >= 0 && padding_idx < V), "embedding: padding_idx ", padding_idx,
           " is out of range for ", V, " embeddings (use -1 for none)");

  Shape out_shape = indices.sizes();
  out_shape.push_back(D);
  Tensor out = Tensor::empty(out_shape, weight.dtype(), weight.device());
  embedding_kernel(out.device(), out, weight, indices);
  if (needs_grad({weight}))
    record(
        "EmbeddingBackward", {weight}, {out},
        [sidx = SavedTensor(indices), padding_idx, V, D](const std::vector<Tensor>& g) {
          if (GradMode::is_enabled()) {  // create_graph: the same scatter-add as differentiable ops
            Tensor rows = reshape(g[0], {-1, D}), flat = reshape(sidx.unpack(), {-1});
            if (padding_idx >= 0) rows = mul(rows, unsqueeze(to(ne(flat, double(padding_idx)), rows.dtype()), 1));
            return std::vector<Tensor>{
                index_add(zeros({V, D}, {.dtype = rows.dtype(), .device = rows.device()}), 0, flat, rows)};
          }
          Tensor dw = Tensor::empty({V, D}, g[0].dtype(), g[0].device());
          embedding_backward_kernel(dw.device(), dw, g[0], sidx.unpack(), padding_idx);
          return std::vector<Tensor>{dw};
        },
        HigherOrder::Supported);
  return out;
}

}  // namespace ks
