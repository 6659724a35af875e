// tests/ops/test_saved_bf16_activations.cpp — under bf16 matmul precision on a
// CPU with a bf16 kernel, the fused softmax attention saves q, k and v rounded
// to bfloat16 (ops/attention.cpp) and the activations gelu and silu save their
// input rounded (Saves::Activation, ops/op_list.h): attention's gradients keep
// their bits (its kernel rounds q, k, v anyway), an activation's derivative
// is taken at the rounded input, each holds half the bytes between forward
// and backward, and create_graph still reaches the inputs. Runs on each
// packed bf16 path this CPU has (tests/ops/gemm_paths.h); on the float32
// path and under float32 precision nothing is rounded.
// Not here: linear's saved input (test_linear_saved_bf16.cpp).
#include "autograd/engine.h"
#include "autograd/grad_mode.h"
#include "core/allocator.h"
#include "core/matmul_precision.h"
#include "core/random.h"
#include "ops/attention.h"
#include "ops/elementwise.h"
#include "ops/gemm_paths.h"
#include "ops/ops_testing.h"
#include "ops/reduce.h"
#include "ops/unary.h"
#include "ops/view.h"
#include "support/testing.h"

using namespace ks;
using namespace ks::testing;

namespace {

// x·1: the same values with a history, as a layer's activations have (a leaf is saved as it is).
Tensor with_history(const Tensor& leaf) { return mul(leaf, 1.0); }

// Bytes the allocator holds after make() has run and dropped everything but its result.
template <class F> int64_t held_by(F&& make) {
  const size_t before = cpu_memory_stats().bytes_in_use;
  Tensor kept = make();
  return int64_t(cpu_memory_stats().bytes_in_use) - int64_t(before);
}

}  // namespace

TEST_CASE("bf16 precision: attention saves q, k, v in bf16 and its gradients keep their bits") {
  for (const bool causal : {false, true}) {
    CAPTURE(causal);
    const int ran = for_each_gemm_path(kPackedPaths, [&](CpuGemmPath) {
      MatmulPrecisionScope scope(MatmulPrecision::BFloat16);
      Generator gen(21);
      // Grouped keys (4 query heads, 2 key/value heads), ragged lengths.
      Tensor q = param({2, 4, 37, 16}, gen), k = param({2, 2, 45, 16}, gen), v = param({2, 2, 45, 24}, gen);
      Tensor g = randn({2, 4, 37, 24}, {}, &gen);
      const SdpaOptions opt{.causal = causal, .causal_offset = 8};
      // Leaves are saved as they are; x·1 (exact, its gradient g·1 too) is saved rounded.
      backward(scaled_dot_product_attention(q, k, v, opt), g);
      const Tensor dq = q.grad(), dk = k.grad(), dv = v.grad();
      for (Tensor* t : {&q, &k, &v}) t->set_grad(Tensor());
      backward(scaled_dot_product_attention(with_history(q), with_history(k), with_history(v), opt), g);
      CHECK(same_bits(q.grad(), dq));
      CHECK(same_bits(k.grad(), dk));
      CHECK(same_bits(v.grad(), dv));
    });
    if (ran == 0) MESSAGE("no packed bf16 path on this CPU: attention saves q, k, v in float32 there");
  }
}

TEST_CASE("bf16 precision: attention's saved q, k, v hold half the bytes") {
  // q, k, v (2, 2, 64, 32) are 32 KiB each in float32 (an exact size class
  // of the allocator); the output and log-sum-exp are saved in both.
  auto held = [](MatmulPrecision p) {
    MatmulPrecisionScope scope(p);
    Generator gen(22);
    Tensor q = param({2, 2, 64, 32}, gen), k = param({2, 2, 64, 32}, gen), v = param({2, 2, 64, 32}, gen);
    return held_by([&] { return scaled_dot_product_attention(with_history(q), with_history(k), with_history(v)); });
  };
  const int ran = for_each_gemm_path(kPackedPaths, [&](CpuGemmPath) {
    CHECK(held(MatmulPrecision::Float32) - held(MatmulPrecision::BFloat16) == 3 * 2 * 2 * 64 * 32 * 2);
  });
  if (ran == 0) MESSAGE("no packed bf16 path on this CPU: nothing is rounded");
  for_each_gemm_path({CpuGemmPath::Float32},
                     [&](CpuGemmPath) { CHECK(held(MatmulPrecision::BFloat16) == held(MatmulPrecision::Float32)); });
}

TEST_CASE("bf16 precision: gelu and silu take their derivative at the bf16-rounded input, holding half the bytes") {
  const std::vector<std::pair<const char*, Tensor (*)(const Tensor&)>> activations = {
      {"gelu", [](const Tensor& x) { return gelu(x); }},
      {"gelu tanh", [](const Tensor& x) { return gelu(x, GeluApprox::Tanh); }},
      {"silu", [](const Tensor& x) { return silu(x); }}};
  for (const auto& activation : activations) {
    const auto& name = activation.first;  // not a structured binding: clang 14 cannot capture one in a lambda
    const auto& f = activation.second;
    CAPTURE(std::string(name));
    const int ran = for_each_gemm_path(kPackedPaths, [&](CpuGemmPath) {
      Generator gen(23);
      Tensor x = param({64, 256}, gen);  // 64 KiB in float32
      Tensor g = randn({64, 256}, {}, &gen);
      Tensor rounded = to(to(detach(x), kBFloat16), kFloat32).set_requires_grad(true);
      {
        MatmulPrecisionScope scope(MatmulPrecision::BFloat16);
        backward(f(with_history(x)), g);
        // A leaf is saved as it is: the reference is the derivative at the rounded values.
        backward(f(rounded), g);
      }
      CHECK(same_bits(x.grad(), rounded.grad()));
      // Under float32 precision, the derivative at x itself.
      Tensor exact = detach(x).set_requires_grad(true);
      backward(f(exact), g);
      x.set_grad(Tensor());
      backward(f(with_history(x)), g);
      CHECK(same_bits(x.grad(), exact.grad()));
      CHECK_FALSE(same_bits(x.grad(), rounded.grad()));  // the two differ: the test can tell them apart
      // Held between forward and backward: the output (64 KiB) and the saved input (64 or 32 KiB).
      auto held = [&](MatmulPrecision p) {
        MatmulPrecisionScope scope(p);
        return held_by([&] { return f(with_history(x)); });
      };
      CHECK(held(MatmulPrecision::Float32) - held(MatmulPrecision::BFloat16) == 64 * 256 * 2);
    });
    if (ran == 0) MESSAGE("no packed bf16 path on this CPU: activations save float32 inputs there");
  }
}

TEST_CASE("create_graph through a gelu and an attention that saved bf16 inputs still reaches them") {
  for_each_gemm_path(kAllGemmPaths, [&](CpuGemmPath) {
    MatmulPrecisionScope scope(MatmulPrecision::BFloat16);
    Generator gen(24);
    Tensor x = param({6, 10}, gen);
    // d/dx Σ gelu'(x) = Σ gelu''(x): through the rounded copy, within bf16's rounding of x.
    Tensor dx = grad({sum(gelu(with_history(x)))}, {x}, {}, {.create_graph = true})[0];
    Tensor ddx = grad({sum(dx)}, {x})[0];
    REQUIRE(ddx.defined());
    Tensor want;
    {
      NoGradGuard no_grad;
      Tensor xd = detach(x);
      // gelu''(x) = φ(x)(2 − x²)
      want = mul(mul(exp(mul(mul(xd, xd), -0.5)), 0.3989422804014327), sub(2.0, mul(xd, xd)));
    }
    check_close(ddx, want, 2e-2, 2e-2);

    Tensor q = param({1, 2, 9, 8}, gen), k = param({1, 2, 9, 8}, gen), v = param({1, 2, 9, 8}, gen);
    Tensor out = scaled_dot_product_attention(with_history(q), with_history(k), with_history(v));
    Tensor dq = grad({sum(mul(out, out))}, {q}, {}, {.create_graph = true})[0];
    Tensor dv = grad({sum(dq)}, {v})[0];
    REQUIRE(dv.defined());
    CHECK(dv.dtype() == kFloat32);
  });
}
