// ops/gemm_layout.cpp — in-place readability of strided matrices for GEMMs.
#include "ops/gemm_layout.h"

#include <algorithm>

#include "core/copy.h"

namespace ks {

std::optional<GemmLayout> gemm_layout(int64_t rows, int64_t cols, int64_t sr, int64_t sc) {
  const int64_t r = std::max<int64_t>(rows, 1), c = std::max<int64_t>(cols, 1);
  if (cols == 1 || sc == 1) {
    const int64_t ld = rows == 1 ? c : sr;
    if (ld >= c) return GemmLayout{false, ld};
  }
  if (rows == 1 || sr == 1) {
    const int64_t ld = cols == 1 ? r : sc;
    if (ld >= r) return GemmLayout{true, ld};
  }
  return std::nullopt;
}

Tensor gemm_ready(const Tensor& t, DType dtype) {
  if (dtype == t.dtype() && gemm_layout(t.size(-2), t.size(-1), t.stride(-2), t.stride(-1))) return t;
  const int64_t batch_dims = t.dim() - 2;
  Shape distinct = t.sizes();
  for (int64_t d = 0; d < batch_dims; ++d)
    if (t.stride(d) == 0) distinct[size_t(d)] = 1;
  Tensor dense = to_raw(t.alias(distinct, t.strides(), t.storage_offset()), t.device(), dtype);
  Shape strides = dense.strides();
  for (int64_t d = 0; d < batch_dims; ++d)
    if (t.stride(d) == 0) strides[size_t(d)] = 0;
  return dense.alias(t.sizes(), strides, dense.storage_offset());
}

}  // namespace ks
