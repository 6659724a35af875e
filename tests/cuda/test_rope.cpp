// tests/cuda/test_rope.cpp — CPU-vs-CUDA agreement of the rope kernel
// (ops/rope.h): offsets, (T,) and (B, T) positions, every layout, forward
// and backward in float32 and float64, and a float64 gradcheck through the GPU.
#include "cuda/cuda_testing.h"

using namespace ks;
using namespace ks::testing;

TEST_CASE("cuda: rope matches the CPU, forward and backward" * needs_gpu()) {
  for (DType d : {kFloat32, kFloat64}) {
    const double r = d == kFloat64 ? 1e-12 : 1e-5;
    for (Layout l : all_layouts()) {
      CAPTURE(d);
      CAPTURE(layout_name(l));
      Twin x = twin({2, 3, 5, 8}, 300, l, d, -2, 2);
      check_grad([](const Tensor& t) { return rope(t, {.offset = 11}); }, x, r);
      check_grad([](const Tensor& t) { return rope(t, {.theta = 500, .offset = 100000, .inverse = true}); }, x, r);
      const Tensor pt = from_vector(std::vector<int64_t>{4, 0, -2, 9, 9}, {5});
      const Tensor pbt = from_vector(std::vector<int64_t>{0, 1, 2, 3, 4, 7, 6, 5, 4, 3}, {2, 5});
      check_matches(rope(x.gpu, {.positions = on_gpu(pt)}), rope(x.cpu, {.positions = pt}), r, r);
      check_matches(rope(x.gpu, {.positions = on_gpu(pbt)}), rope(x.cpu, {.positions = pbt}), r, r);
    }
  }
  CHECK_GRADCHECK(
      [](const std::vector<Tensor>& t) {
        return through_gpu([](const std::vector<Tensor>& u) { return rope(u[0], {.offset = 3}); }, t);
      },
      {leaf64({2, 4, 6}, 301)});
}
