// tests/cuda/test_mixture_attention.cpp — CPU-vs-CUDA agreement of the fused
// MGK attention mixture_attention (ops/mixture_attention.h): forward, soft-E
// totals and the gradients of q, k, bias and v, soft and hard, M = 1..3, head
// sizes 16..64 and odd ones, e != p, every layout and a broadcast bias,
// causal masks with offsets, key padding, fully masked rows, dropout (the
// same mask on both devices for one seed), and a float64 gradcheck through
// the GPU. The CPU kernel is checked against the composed path in
// tests/ops/test_mixture_attention.cpp.
#include <cmath>

#include "cuda/cuda_testing.h"
#include "ops/mixture_attention.h"

using namespace ks;
using namespace ks::testing;

namespace {

struct Shapes {
  int64_t B, H, T, S, M, P, E;
};

// Both devices (each with its own generator of one seed), outputs, totals and
// the gradients of sum(out ∘ w).
void compare(const Shapes& s, DType dtype, Layout layout, MixtureAttentionOptions o, double tol, uint64_t seed,
             bool batch_bias = true) {
  Leaves q = leaves(twin({s.B, s.H, s.T, s.P}, seed, layout, dtype, -2, 2));
  Leaves k = leaves(twin({s.B, s.H, s.M, s.S, s.P}, seed + 1, layout, dtype, -2, 2));
  Leaves b = leaves(twin(batch_bias ? Shape{s.B, s.H, s.M, s.S} : Shape{1, s.H, s.M, s.S}, seed + 2, layout, dtype));
  Leaves v = leaves(twin({s.B, s.H, s.S, s.E}, seed + 3, layout, dtype));
  const Tensor pad = o.key_padding;
  o.totals = true;
  Generator gc(seed + 4), gg(seed + 4);
  o.gen = &gc;
  MixtureAttention yc = mixture_attention(q.cpu, k.cpu, b.cpu, v.cpu, o);
  o.gen = &gg;
  if (pad.defined()) o.key_padding = on_gpu(pad);
  MixtureAttention yg = mixture_attention(q.gpu, k.gpu, b.gpu, v.gpu, o);
  CHECK(gc.offset() == gg.offset());
  check_matches(yg.out, yc.out, tol, tol);
  check_matches(yg.totals, yc.totals, tol, tol);
  Generator wg(seed + 5);
  Tensor w = rand(yc.out.sizes(), {.dtype = dtype}, &wg);
  backward(sum(mul(yc.out, w)));
  backward(sum(mul(yg.out, on_gpu(w))));
  check_matches(q.gpu.grad(), q.cpu.grad(), tol, tol);
  check_matches(k.gpu.grad(), k.cpu.grad(), tol, tol);
  check_matches(b.gpu.grad(), b.cpu.grad(), tol, tol);
  check_matches(v.gpu.grad(), v.cpu.grad(), tol, tol);
}

double tol_for(DType d) { return d == kFloat64 ? 1e-11 : 2e-4; }

}  // namespace

TEST_CASE("cuda: mixture_attention matches the CPU over M, head sizes, layouts and masks" * needs_gpu()) {
  for (int64_t M : {1, 2, 3})
    for (int64_t p : {16, 24, 32, 64})
      for (DType d : {kFloat32, kFloat64})
        for (bool hard : {false, true}) {
          CAPTURE(M);
          CAPTURE(p);
          CAPTURE(d);
          CAPTURE(hard);
          const Shapes s{2, 2, 70, 133, M, p, p};
          compare(s, d, Layout::Contiguous, {.hard = hard}, tol_for(d), 500);
          compare(s, d, Layout::Contiguous,
                  {.hard = hard,
                   .causal = true,
                   .causal_offset = 63,
                   .key_padding = padding(2, 133, {{0, 3}, {1, 100}, {1, 132}})},
                  tol_for(d), 510, false);
        }
  // e != p, every layout, causal with a negative offset (first rows fully masked) and padding.
  Tensor pad = padding(2, 37, {{0, 0}, {0, 1}, {1, 36}});
  for (DType d : {kFloat32, kFloat64})
    for (Layout l : all_layouts()) {
      CAPTURE(d);
      CAPTURE(layout_name(l));
      const Shapes s{2, 3, 19, 37, 2, 8, 40};
      compare(s, d, l, {}, tol_for(d), 520);
      compare(s, d, l, {.scale = 0.2, .causal = true, .causal_offset = -3, .key_padding = pad}, tol_for(d), 530);
      compare(s, d, l, {.hard = true, .causal = true, .causal_offset = 18}, tol_for(d), 540);
    }
  // Every key of batch 1 padded: zeros with zero gradient on both devices.
  compare({2, 2, 5, 6, 2, 4, 4}, kFloat64, Layout::Contiguous,
          {.key_padding = padding(2, 6, {{1, 0}, {1, 1}, {1, 2}, {1, 3}, {1, 4}, {1, 5}})}, 1e-12, 550);
}

TEST_CASE("cuda: mixture_attention draws the CPU's dropout mask" * needs_gpu()) {
  for (double p : {0.1, 0.5, 1.0})
    for (DType d : {kFloat32, kFloat64}) {
      CAPTURE(p);
      CAPTURE(d);
      compare({2, 3, 70, 133, 2, 32, 24}, d, Layout::Contiguous,
              {.causal = true, .causal_offset = 70, .dropout_p = p, .training = true}, tol_for(d), 600);
    }
}

TEST_CASE("cuda: mixture_attention gradchecks through the GPU" * needs_gpu()) {
  Tensor pad = on_gpu(padding(2, 6, {{0, 2}, {1, 0}, {1, 1}}));
  for (Layout l : all_layouts()) {
    CAPTURE(layout_name(l));
    CHECK_GRADCHECK(
        [&](const std::vector<Tensor>& t) {
          Generator gen(7);
          MixtureAttentionOptions o{
              .causal = true, .causal_offset = 1, .key_padding = pad, .dropout_p = 0.3, .training = true, .gen = &gen};
          return to(mixture_attention(to(t[0], gpu()), to(t[1], gpu()), to(t[2], gpu()), to(t[3], gpu()), o).out,
                    Device::cpu());
        },
        {leaf64({2, 2, 4, 3}, 800, l), leaf64({2, 2, 2, 6, 3}, 801, l), leaf64({2, 2, 2, 6}, 802, l),
         leaf64({2, 2, 6, 5}, 803, l)});
  }
}
