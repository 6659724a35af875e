// ops/indexing.cpp — checks, output shapes and backward formulas of the
// index ops; the loops (and the range checks of index values, which need the
// data) are in cpu/indexing.cpp.
//
// The pairs are each other's backward: index_select <-> index_add and
// gather <-> scatter_add; under create_graph the backward calls the other op
// itself (differentiable), otherwise its kernel.
#include "ops/indexing.h"

#include "autograd/node.h"
#include "core/copy.h"
#include "core/factory.h"
#include "ops/shape.h"
#include "ops/view.h"

namespace ks {

constinit KernelTable<IndexSelectKernel> index_select_kernel("index_select");
constinit KernelTable<IndexAddKernel> index_add_kernel("index_add");
constinit KernelTable<GatherKernel> gather_kernel("gather");
constinit KernelTable<ScatterAddKernel> scatter_add_kernel("scatter_add");

namespace {

void check_index(const char* op, const Tensor& x, const Tensor& index) {
  KS_CHECK(x.defined(), op, ": undefined input");
  KS_CHECK(index.defined(), op, ": undefined index");
  KS_CHECK(index.dtype() == kInt64, op, ": index must be an int64 tensor, got ", describe(index));
  KS_CHECK(index.device() == x.device(), op, ": index ", describe(index), " is not on the device of input ",
           describe(x));
}

// index_select/index_add: x has a dim to index and index is 0-d or 1-D (seen as 1-D).
Tensor checked_row_index(const char* op, const Tensor& x, const Tensor& index) {
  check_index(op, x, index);
  KS_CHECK(x.dim() > 0, op, ": expected an input with at least one dim, got ", describe(x));
  KS_CHECK(index.dim() <= 1, op, ": index must be 1-D, got ", describe(index));
  return index.dim() == 1 ? index : index.alias({1}, {1}, index.storage_offset());
}

// gather/scatter_add (after check_index): index has x's rank and fits inside x off `dim`.
void check_same_rank_index(const char* op, const Tensor& x, int64_t d, const Tensor& index) {
  KS_CHECK(index.dim() == x.dim(), op, ": index ", describe(index), " must have as many dims as input ", describe(x));
  for (int64_t e = 0; e < x.dim(); ++e)
    KS_CHECK(e == d || index.size(e) <= x.size(e), op, ": index ", describe(index), " is larger than input ",
             describe(x), " in dim ", e, " (only dim ", d, " may differ)");
}

// A fresh tensor holding x's values: the base the adding ops write into.
Tensor copy_of(const Tensor& x) {
  Tensor out = Tensor::empty(x.sizes(), x.dtype(), x.device());
  copy_(out, x);
  return out;
}

}  // namespace

Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index_in) {
  Tensor index = checked_row_index("index_select", x, index_in);
  const int64_t d = wrap_dim(dim, x.dim(), "index_select");
  Shape shape = x.sizes();
  shape[size_t(d)] = index.numel();
  Tensor out = Tensor::empty(shape, x.dtype(), x.device());
  index_select_kernel(x.device(), out, x, d, index);
  if (needs_grad({x}))
    record(
        "IndexSelectBackward", {x}, {out},
        [in = x.sizes(), d, si = SavedTensor(index)](const std::vector<Tensor>& g) {
          Tensor gx = zeros(in, {.dtype = g[0].dtype(), .device = g[0].device()});
          if (GradMode::is_enabled()) return std::vector<Tensor>{index_add(gx, d, si.unpack(), g[0])};  // create_graph
          index_add_kernel(gx.device(), gx, d, si.unpack(), g[0]);
          return std::vector<Tensor>{gx};
        },
        HigherOrder::Supported);
  return out;
}

Tensor index_add(const Tensor& x, int64_t dim, const Tensor& index_in, const Tensor& src) {
  Tensor index = checked_row_index("index_add", x, index_in);
  const int64_t d = wrap_dim(dim, x.dim(), "index_add");
  Shape want = x.sizes();
  want[size_t(d)] = index.numel();
  KS_CHECK(src.defined() && src.sizes() == want && src.dtype() == x.dtype() && src.device() == x.device(),
           "index_add: src must be ", name(x.dtype()), " ", want, " (input ", describe(x), " with dim ", d,
           " of the index's size ", index.numel(), "), got ", describe(src));
  Tensor out = copy_of(x);
  index_add_kernel(out.device(), out, d, index, src);
  if (needs_grad({x, src}))
    record(
        "IndexAddBackward", {x, src}, {out},
        [d, si = SavedTensor(src.requires_grad() ? index : Tensor()),
         gx = x.requires_grad()](const std::vector<Tensor>& g) {
          Tensor dsrc = si.defined() ? index_select(g[0], d, si.unpack()) : Tensor();
          return std::vector<Tensor>{gx ? g[0] : Tensor(), dsrc};
        },
        HigherOrder::Supported);
  return out;
}

Tensor gather(const Tensor& x, int64_t dim, const Tensor& index) {
  check_index("gather", x, index);
  KS_CHECK(x.dim() > 0, "gather: expected an input with at least one dim, got ", describe(x));
  const int64_t d = wrap_dim(dim, x.dim(), "gather");
  check_same_rank_index("gather", x, d, index);
  Tensor out = Tensor::empty(index.sizes(), x.dtype(), x.device());
  gather_kernel(x.device(), out, x, d, index);
  if (needs_grad({x}))
    record(
        "GatherBackward", {x}, {out},
        [in = x.sizes(), d, si = SavedTensor(index)](const std::vector<Tensor>& g) {
          Tensor gx = zeros(in, {.dtype = g[0].dtype(), .device = g[0].device()});
          if (GradMode::is_enabled())
            return std::vector<Tensor>{scatter_add(gx, d, si.unpack(), g[0])};  // create_graph
          scatter_add_kernel(gx.device(), gx, d, si.unpack(), g[0]);
          return std::vector<Tensor>{gx};
        },
        HigherOrder::Supported);
  return out;
}

Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  check_index("scatter_add", x, index);
  KS_CHECK(x.dim() > 0, "scatter_add: expected an input with at least one dim, got ", describe(x));
  const int64_t d = wrap_dim(dim, x.dim(), "scatter_add");
  check_same_rank_index("scatter_add", x, d, index);
  KS_CHECK(src.defined() && src.dtype() == x.dtype() && src.device() == x.device() && src.dim() == x.dim(),
           "scatter_add: src ", describe(src), " must have the dtype, device and rank of input ", describe(x));
  for (int64_t e = 0; e < x.dim(); ++e)
    KS_CHECK(index.size(e) <= src.size(e), "scatter_add: index ", describe(index), " is larger than src ",
             describe(src), " in dim ", e);
  Tensor out = copy_of(x);
  scatter_add_kernel(out.device(), out, d, index, src);
  if (needs_grad({x, src}))
    record(
        "ScatterAddBackward", {x, src}, {out},
        [d, si = SavedTensor(src.requires_grad() ? index : Tensor()), src_shape = src.sizes(),
         gx = x.requires_grad()](const std::vector<Tensor>& g) {
          Tensor dsrc;
          if (si.defined()) {
            Tensor idx = si.unpack();
            dsrc = gather(g[0], d, idx);
            if (src_shape != idx.sizes()) {  // src elements the index never reads get zero: pad at the ends
              std::vector<int64_t> pads;
              for (int64_t e = idx.dim() - 1; e >= 0; --e)
                pads.insert(pads.end(), {0, src_shape[size_t(e)] - idx.size(e)});
              dsrc = pad(dsrc, pads);
            }
          }
          return std::vector<Tensor>{gx ? g[0] : Tensor(), dsrc};
        },
        HigherOrder::Supported);
  return out;
}

}  // namespace ks
