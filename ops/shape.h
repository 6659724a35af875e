// ops/shape.h — ops that rearrange whole blocks of a tensor: joining
// (cat, stack), cutting (split, chunk), tiling (repeat), padding, flipping and
// triangular masks.
//
// All take float, integer and bool tensors alike and keep the input's dtype
// and device. Joining and cutting follow PyTorch exactly, including
// negative dims. Elementwise arithmetic is in elementwise.h, gathers by index
// tensors in indexing.h, running sums in scan.h; the pure views (reshape,
// narrow, ...) are in view.h.
#pragma once

#include <initializer_list>
#include <vector>

#include "core/dispatch.h"
#include "core/tensor.h"

namespace ks {

// Joins tensors along an existing dim. All must share dtype and device and
// have equal sizes except along `dim`; like PyTorch, a tensor of shape [0]
// is skipped whatever the others' shapes. Always a new tensor.
//   cat({(2, 3), (2, 5)}, 1) -> (2, 8)
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0);
// Joins equal-shaped tensors along a new dim, dim in [-(r + 1), r].
//   stack({(2, 3)} x 4, 1) -> (2, 4, 3)
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0);

// Views (sharing storage, differentiable) of consecutive pieces along dim.
// split_size: pieces of that size, the last one smaller if it does not divide.
std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim = 0);
// sizes: one piece per entry; they must add up to x.size(dim).
std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t dim = 0);
// So that split(x, {4}, 0) means sizes [4], not split_size 4.
inline std::vector<Tensor> split(const Tensor& x, std::initializer_list<int64_t> sizes, int64_t dim = 0) {
  return split(x, std::vector<int64_t>(sizes), dim);
}
// `chunks` pieces of ceil(size / chunks) (fewer if the size runs out first).
std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim = 0);

// Tiles x like torch.Tensor.repeat: repeats has at least x.dim() entries
// (x gains leading size-1 dims to match); result size = size * repeat per dim.
//   repeat((2, 3), {2, 1, 2}) -> (2, 2, 6)
Tensor repeat(const Tensor& x, const std::vector<int64_t>& repeats);

// Constant padding like torch.nn.functional.pad: pads = (left_last,
// right_last, left_second_last, right_second_last, ...), at most two per dim;
// a negative pad crops. New elements are `value`.
//   pad((2, 3), {1, 2}) -> (2, 6);  pad((2, 3), {0, 0, -1, 1}) -> (2, 3)
Tensor pad(const Tensor& x, const std::vector<int64_t>& pads, double value = 0.0);

// A copy with the order of elements reversed along every dim in dims.
Tensor flip(const Tensor& x, const std::vector<int64_t>& dims);

// x with elements below (triu) or above (tril) the `diagonal`-th diagonal of
// the last two dims set to zero, for every batch index. diagonal 0 is the main
// diagonal, > 0 above it, < 0 below. x: (..., R, C).
Tensor triu(const Tensor& x, int64_t diagonal = 0);
Tensor tril(const Tensor& x, int64_t diagonal = 0);

// --- kernels ---
// out (same shape as x, fresh): x where (col - row >= diagonal) for upper,
// (col - row <= diagonal) otherwise; zero elsewhere.
using TriangleKernel = void(const Tensor& out, const Tensor& x, int64_t diagonal, bool upper);
extern KernelTable<TriangleKernel> triangle_kernel;

}  // namespace ks
