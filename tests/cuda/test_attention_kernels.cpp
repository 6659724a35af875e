// tests/cuda/test_attention_kernels.cpp — CPU-vs-CUDA agreement of the two
// fused attention kernels: mixture_softmax (MGK's weights and
// responsibilities, soft and hard, with causal and padding masks broadcast
// from small shapes, rows of a warp and of a block, fully masked rows) and
// causal_linear_attention (with and without initial sums, e != p), forward
// and every input's gradient, plus float64 gradchecks through the GPU.
#include <cmath>

#include "cuda/cuda_testing.h"
#include "ops/linear_attention.h"
#include "ops/mixture.h"

using namespace ks;
using namespace ks::testing;

TEST_CASE("cuda: mixture_softmax forward and backward match the CPU" * needs_gpu()) {
  // (B, h, T, M, S): short rows (a warp each) and long rows (a block each).
  for (const Shape& shape : {Shape{2, 3, 5, 2, 7}, Shape{1, 2, 3, 3, 1500}}) {
    const int64_t T = shape[2], S = shape[4];
    Tensor causal = tril(ones({T, S}, {.dtype = kBool}), S - T);  // true = visible
    Tensor hide_causal = logical_not(causal);
    Tensor padding = zeros({shape[0], 1, 1, S}, {.dtype = kBool});
    fill_(slice(padding, 3, S - 2, S), 1.0);  // the last two keys padded
    for (DType d : {kFloat32, kFloat64}) {
      const double r = d == kFloat64 ? 1e-11 : 2e-5;
      for (Layout l : all_layouts()) {
        for (bool hard : {false, true}) {
          for (int masking = 0; masking < 3; ++masking) {
            CAPTURE(d);
            CAPTURE(layout_name(l));
            CAPTURE(hard);
            CAPTURE(masking);
            CAPTURE(S);
            Twin s = twin(shape, 400, l, d, -3, 3);
            Twin b = twin({shape[1], shape[3], S}, 401, l, d, -1, 1);  // broadcast over B
            Tensor mask_cpu = masking == 0 ? Tensor() : masking == 1 ? hide_causal : padding;
            Tensor mask_gpu = mask_cpu.defined() ? on_gpu(mask_cpu) : Tensor();
            Leaves sl = leaves(s), bl = leaves(b);
            const MixtureOptions opts{.hard = hard, .responsibilities = true};
            MixtureSoftmax yc = mixture_softmax(sl.cpu, bl.cpu, 0.7, mask_cpu, opts);
            MixtureSoftmax yg = mixture_softmax(sl.gpu, bl.gpu, 0.7, mask_gpu, opts);
            check_matches(yg.weights, yc.weights, r, r);
            check_matches(yg.responsibilities, yc.responsibilities, r, r);
            backward_both(yc.weights, yg.weights, 402);
            check_matches(sl.gpu.grad(), sl.cpu.grad(), r, r);
            check_matches(bl.gpu.grad(), bl.cpu.grad(), r, r);
          }
        }
      }
    }
  }
  // A fully masked row gives zeros (never NaN) and zero gradient; weights only.
  Twin s = twin({2, 3, 2, 4}, 403);
  Twin b = twin({2, 4}, 404);
  Tensor mask = zeros({3, 4}, {.dtype = kBool});
  fill_(select(mask, 0, 1), 1.0);
  Leaves sl = leaves(s), bl = leaves(b);
  MixtureSoftmax yc = mixture_softmax(sl.cpu, bl.cpu, 1.0, mask),
                 yg = mixture_softmax(sl.gpu, bl.gpu, 1.0, on_gpu(mask));
  CHECK_FALSE(yg.responsibilities.defined());
  check_matches(yg.weights, yc.weights, 1e-5, 1e-5);
  backward_both(yc.weights, yg.weights, 405);
  check_matches(sl.gpu.grad(), sl.cpu.grad(), 1e-5, 1e-5);
  check_matches(bl.gpu.grad(), bl.cpu.grad(), 1e-5, 1e-5);
  // Gradchecks through the GPU, soft and hard, with a causal mask.
  Tensor hide = on_gpu(logical_not(tril(ones({3, 4}, {.dtype = kBool}), 1)));
  for (bool hard : {false, true}) {
    for (Layout l : all_layouts()) {
      CAPTURE(hard);
      CAPTURE(layout_name(l));
      CHECK_GRADCHECK(
          [&](const std::vector<Tensor>& t) {
            return through_gpu(
                [&](const std::vector<Tensor>& u) {
                  return mixture_softmax(u[0], u[1], 0.5, hide, {.hard = hard}).weights;
                },
                t);
          },
          {leaf64({2, 3, 2, 4}, 406, l, -2, 2), leaf64({2, 4}, 407, l)});
    }
  }
}

TEST_CASE("cuda: causal_linear_attention forward and backward match the CPU" * needs_gpu()) {
  struct Case {
    Shape qk, v;
    bool sums;
  };
  // e != p, e > 32 with p < 32, initial sums, and a training-sized head (p = e = 64, T = 300).
  for (const Case& c : {Case{{2, 3, 17, 4}, {2, 3, 17, 6}, false}, Case{{2, 3, 17, 4}, {2, 3, 17, 40}, true},
                        Case{{2, 4, 300, 64}, {2, 4, 300, 64}, false}}) {
    for (DType d : {kFloat32, kFloat64}) {
      const double r = d == kFloat64 ? 1e-11 : 2e-5;
      for (Layout l : all_layouts()) {
        CAPTURE(d);
        CAPTURE(layout_name(l));
        CAPTURE(c.qk[2]);
        CAPTURE(c.v[3]);
        const int64_t P = c.qk[3], E = c.v[3];
        Twin q = twin(c.qk, 500, l, d, 0.1, 1), k = twin(c.qk, 501, l, d, 0.1, 1), v = twin(c.v, 502, l, d);
        Leaves ql = leaves(q), kl = leaves(k), vl = leaves(v);
        Leaves sl, zl;
        if (c.sums) {
          sl = leaves(twin({c.qk[0], c.qk[1], P, E}, 503, l, d));
          zl = leaves(twin({c.qk[0], c.qk[1], P}, 504, l, d, 0.5, 2));
        }
        Tensor yc = causal_linear_attention(ql.cpu, kl.cpu, vl.cpu, sl.cpu, zl.cpu);
        Tensor yg = causal_linear_attention(ql.gpu, kl.gpu, vl.gpu, sl.gpu, zl.gpu);
        check_matches(yg, yc, r, r);
        backward_both(yc, yg, 505);
        check_matches(ql.gpu.grad(), ql.cpu.grad(), r, r);
        check_matches(kl.gpu.grad(), kl.cpu.grad(), r, r);
        check_matches(vl.gpu.grad(), vl.cpu.grad(), r, r);
        if (c.sums) {
          check_matches(sl.gpu.grad(), sl.cpu.grad(), r, r);
          check_matches(zl.gpu.grad(), zl.cpu.grad(), r, r);
        }
      }
    }
  }
  // Only v needs a gradient: the kernel's other outputs are absent.
  Twin q = twin({1, 2, 9, 3}, 506, Layout::Contiguous, kFloat64, 0.1, 1),
       k = twin({1, 2, 9, 3}, 507, Layout::Contiguous, kFloat64, 0.1, 1);
  Twin v = twin({1, 2, 9, 5}, 508, Layout::Contiguous, kFloat64);
  Leaves vl = leaves(v);
  Tensor yc = causal_linear_attention(q.cpu, k.cpu, vl.cpu), yg = causal_linear_attention(q.gpu, k.gpu, vl.gpu);
  backward_both(yc, yg, 509);
  check_matches(vl.gpu.grad(), vl.cpu.grad(), 1e-11, 1e-11);
  for (Layout l : all_layouts()) {
    CAPTURE(layout_name(l));
    CHECK_GRADCHECK(
        [](const std::vector<Tensor>& t) {
          return through_gpu(
              [](const std::vector<Tensor>& u) { return causal_linear_attention(u[0], u[1], u[2], u[3], u[4]); }, t);
        },
        {leaf64({1, 2, 5, 3}, 510, l, 0.1, 1), leaf64({1, 2, 5, 3}, 511, l, 0.1, 1), leaf64({1, 2, 5, 4}, 512, l),
         leaf64({1, 2, 3, 4}, 513, l), leaf64({1, 2, 3}, 514, l, 0.5, 2)});
  }
}
