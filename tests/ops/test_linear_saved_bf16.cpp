// tests/ops/test_linear_saved_bf16.cpp — linear under bf16 matmul precision
// saves its input rounded to bfloat16 (ops/linalg.cpp): the gradients are the
// same bits as the backward's GEMMs give from the float32 input, the memory
// held between forward and backward is half, the query/key/value projections
// of one input share one copy, and create_graph still reaches the input.
// Runs on each packed bf16 path this CPU has (tests/ops/gemm_paths.h) and on
// the float32 path, where nothing is rounded.
// Not here: the bf16 GEMMs themselves (test_gemm_bf16.cpp).
#include "autograd/engine.h"
#include "autograd/grad_mode.h"
#include "autograd/node.h"
#include "core/allocator.h"
#include "core/matmul_precision.h"
#include "core/random.h"
#include "ops/elementwise.h"
#include "ops/gemm_paths.h"
#include "ops/linalg.h"
#include "ops/ops_testing.h"
#include "ops/reduce.h"
#include "ops/view.h"
#include "support/testing.h"

using namespace ks;
using namespace ks::testing;

TEST_CASE("linear saves its input in bf16 under bf16 precision, and the gradients keep their bits") {
  // out >= in takes the fused backward kernel, out < in the composed GEMMs.
  for (const auto& shape : {std::pair<int64_t, int64_t>{48, 80}, {96, 40}}) {
    const int64_t in = shape.first, out = shape.second;  // not a structured binding: CAPTURE's lambda (clang 14)
    CAPTURE(in);
    CAPTURE(out);
    const int ran = for_each_gemm_path(kPackedPaths, [&](CpuGemmPath) {
      MatmulPrecisionScope scope(MatmulPrecision::BFloat16);
      Generator gen(11);
      Tensor x = param({37, in}, gen), w = param({out, in}, gen), b = param({out}, gen);
      Tensor g = randn({37, out}, {}, &gen);
      backward(linear(x, w, b), g);
      // The backward's products from the float32 x, rounded inside the GEMMs.
      NoGradGuard no_grad;
      Tensor dx, dw, db;
      if (!linear_backward_kernel(Device::cpu(), g, detach(x), detach(w), true, true, dx, dw, db)) {
        dx = matmul(g, detach(w));
        dw = matmul(transpose(g, 0, 1), detach(x));
      }
      CHECK(same_bits(w.grad(), dw));
      CHECK(same_bits(x.grad(), dx));
    });
    if (ran == 0) MESSAGE("no packed bf16 path on this CPU: linear saves its input in float32 there");
  }
}

TEST_CASE(
    "bf16 precision halves what a linear's input holds between forward and backward, and q, k, v share one copy") {
  // h = x·W1ᵀ (64, 512) is held only by the linears that read it: 128 KiB in
  // float32, a 64 KiB copy in bf16 (both exact size classes of the allocator).
  // The leaf x is saved as it is (a copy would add bytes).
  auto held_after_forward = [](MatmulPrecision p, int readers) {
    MatmulPrecisionScope scope(p);
    Generator gen(12);
    Tensor x = param({64, 32}, gen), w1 = param({512, 32}, gen);
    std::vector<Tensor> ws;
    for (int r = 0; r < readers; ++r) ws.push_back(param({16, 512}, gen));
    std::vector<Tensor> outs;
    const size_t before = cpu_memory_stats().bytes_in_use;
    {
      SharedLinearInput share;
      Tensor h = linear(x, w1);
      for (const Tensor& w : ws) outs.push_back(linear(h, w));
    }
    return int64_t(cpu_memory_stats().bytes_in_use) - int64_t(before);
  };
  const int ran = for_each_gemm_path(kPackedPaths, [&](CpuGemmPath) {
    for (int readers : {1, 3}) {
      CAPTURE(readers);
      const int64_t f32 = held_after_forward(MatmulPrecision::Float32, readers);
      const int64_t b16 = held_after_forward(MatmulPrecision::BFloat16, readers);
      CHECK(f32 - b16 == 64 * 512 * 2);
    }
  });
  if (ran == 0) MESSAGE("no packed bf16 path on this CPU: nothing is rounded, nothing saved");
  // Without a bf16 kernel bf16 precision computes in float32, and x is saved as it is.
  for_each_gemm_path({CpuGemmPath::Float32}, [&](CpuGemmPath) {
    CHECK(held_after_forward(MatmulPrecision::BFloat16, 3) == held_after_forward(MatmulPrecision::Float32, 3));
  });
}

TEST_CASE("create_graph through a linear that saved its input in bf16 still reaches the input") {
  for_each_gemm_path(kAllGemmPaths, [&](CpuGemmPath) {
    MatmulPrecisionScope scope(MatmulPrecision::BFloat16);
    Generator gen(13);
    Tensor x = param({5, 8}, gen), w = param({6, 8}, gen);
    Tensor c = randn({6, 8}, {}, &gen);
    // dW = gᵀ·x with g = 1, so z = Σ c ∘ dW has dz/dx[r, i] = Σ_o c[o, i].
    Tensor dw = grad({sum(linear(x, w))}, {w}, {}, {.create_graph = true})[0];
    Tensor dx = grad({sum(mul(dw, c))}, {x})[0];
    REQUIRE(dx.defined());
    CHECK(dx.dtype() == kFloat32);
    Tensor want = expand(sum(c, {0}, /*keepdim=*/true), {5, 8});
    check_close(dx, want, 1e-6, std::ldexp(1.0, -8));  // through bf16 products and casts
  });
}
