// tests/cuda/test_sdpa.cpp — CPU-vs-CUDA agreement of the fused
// scaled_dot_product_attention (ops/attention.h): forward and the gradients
// of q, k, v over head sizes 16..128 and odd ones (24, 72), e != p, every
// layout, causal masks with offsets, key padding, fully masked rows, dropout
// (the same mask on both devices for one seed, and the same generator
// advance), a long sequence, and a float64 gradcheck through the GPU.
// The CPU kernel is checked against plain loops in tests/ops/test_attention_op.cpp.
#include <cmath>

#include "cuda/cuda_testing.h"
#include "ops/attention.h"

using namespace ks;
using namespace ks::testing;

namespace {

struct Shapes {
  int64_t B, H, T, S, P, E;
};

// Runs the op on both devices (each with its own generator of one seed when
// training), compares the outputs and the gradients of sum(out ∘ w).
void compare(const Shapes& s, DType dtype, Layout layout, SdpaOptions o, double tol, uint64_t seed) {
  Leaves q = leaves(twin({s.B, s.H, s.T, s.P}, seed, layout, dtype, -2, 2));
  Leaves k = leaves(twin({s.B, s.H, s.S, s.P}, seed + 1, layout, dtype, -2, 2));
  Leaves v = leaves(twin({s.B, s.H, s.S, s.E}, seed + 2, layout, dtype));
  const Tensor pad = o.key_padding;
  Generator gc(seed + 3), gg(seed + 3);
  o.gen = &gc;
  Tensor yc = scaled_dot_product_attention(q.cpu, k.cpu, v.cpu, o);
  o.gen = &gg;
  if (pad.defined()) o.key_padding = on_gpu(pad);
  Tensor yg = scaled_dot_product_attention(q.gpu, k.gpu, v.gpu, o);
  CHECK(gc.offset() == gg.offset());
  check_matches(yg, yc, tol, tol);
  Generator wg(seed + 4);
  Tensor w = rand(yc.sizes(), {.dtype = dtype}, &wg);
  backward(sum(mul(yc, w)));
  backward(sum(mul(yg, on_gpu(w))));
  check_matches(q.gpu.grad(), q.cpu.grad(), tol, tol);
  check_matches(k.gpu.grad(), k.cpu.grad(), tol, tol);
  check_matches(v.gpu.grad(), v.cpu.grad(), tol, tol);
}

double tol_for(DType d) { return d == kFloat64 ? 1e-11 : 2e-4; }

}  // namespace

TEST_CASE("cuda: scaled_dot_product_attention matches the CPU over head sizes, layouts and masks" * needs_gpu()) {
  for (int64_t p : {16, 24, 32, 64, 72, 128})
    for (DType d : {kFloat32, kFloat64}) {
      CAPTURE(p);
      CAPTURE(d);
      const Shapes s{2, 2, 70, 133, p, p};
      compare(s, d, Layout::Contiguous, {}, tol_for(d), 500);
      compare(s, d, Layout::Contiguous,
              {.causal = true, .causal_offset = 63, .key_padding = padding(2, 133, {{0, 3}, {1, 100}, {1, 132}})},
              tol_for(d), 510);
    }
  // e != p, every layout, causal with negative offset (first rows fully masked) and padding.
  Tensor pad = padding(2, 37, {{0, 0}, {0, 1}, {1, 36}});
  for (DType d : {kFloat32, kFloat64})
    for (Layout l : all_layouts()) {
      CAPTURE(d);
      CAPTURE(layout_name(l));
      const Shapes s{2, 3, 19, 37, 8, 40};
      compare(s, d, l, {}, tol_for(d), 520);
      compare(s, d, l, {.scale = 0.2, .causal = true, .causal_offset = -3, .key_padding = pad}, tol_for(d), 530);
      compare(s, d, l, {.causal = true, .causal_offset = 18}, tol_for(d), 540);
    }
  // Every key of batch 1 padded: its rows are zeros with zero gradient on both devices.
  compare({2, 2, 5, 6, 4, 4}, kFloat64, Layout::Contiguous,
          {.key_padding = padding(2, 6, {{1, 0}, {1, 1}, {1, 2}, {1, 3}, {1, 4}, {1, 5}})}, 1e-12, 550);
}

TEST_CASE("cuda: scaled_dot_product_attention draws the CPU's dropout mask" * needs_gpu()) {
  for (double p : {0.1, 0.5, 1.0})
    for (DType d : {kFloat32, kFloat64}) {
      CAPTURE(p);
      CAPTURE(d);
      compare({2, 3, 70, 133, 32, 24}, d, Layout::Contiguous,
              {.causal = true, .causal_offset = 70, .dropout_p = p, .training = true}, tol_for(d), 600);
    }
}

TEST_CASE("cuda: scaled_dot_product_attention on a long sequence" * needs_gpu()) {
  compare({1, 4, 1024, 1024, 64, 64}, kFloat32, Layout::Contiguous, {.causal = true}, 2e-4, 700);
  compare({1, 2, 1024, 1024, 128, 128}, kFloat64, Layout::Contiguous, {.dropout_p = 0.1, .training = true}, 1e-11, 710);
}

TEST_CASE("cuda: scaled_dot_product_attention gradchecks through the GPU" * needs_gpu()) {
  Tensor pad = on_gpu(padding(2, 6, {{0, 2}, {1, 0}, {1, 1}}));
  for (Layout l : all_layouts()) {
    CAPTURE(layout_name(l));
    CHECK_GRADCHECK(
        [&](const std::vector<Tensor>& t) {
          Generator gen(7);
          SdpaOptions o{
              .causal = true, .causal_offset = 1, .key_padding = pad, .dropout_p = 0.3, .training = true, .gen = &gen};
          return to(scaled_dot_product_attention(to(t[0], gpu()), to(t[1], gpu()), to(t[2], gpu()), o), Device::cpu());
        },
        {leaf64({2, 2, 4, 3}, 800, l), leaf64({2, 2, 6, 3}, 801, l), leaf64({2, 2, 6, 5}, 802, l)});
  }
}
