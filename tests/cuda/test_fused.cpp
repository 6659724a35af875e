// tests/cuda/test_fused.cpp — CPU-vs-CUDA agreement of the fused kernels:
// softmax/log_softmax, layer_norm, rms_norm, cross_entropy/nll_loss/mse_loss,
// embedding, dropout and the optimizer updates, forward and backward, with
// float64 gradchecks through the GPU and the error messages of bad targets
// and indices.
#include "cuda/cuda_testing.h"

using namespace ks;
using namespace ks::testing;

namespace {}  // namespace

TEST_CASE("cuda: softmax and log_softmax match the CPU" * needs_gpu()) {
  for (DType d : {kFloat32, kFloat64}) {
    const double r = d == kFloat64 ? 1e-12 : 1e-5;
    for (Layout l : all_layouts()) {
      CAPTURE(d);
      CAPTURE(layout_name(l));
      // Short rows (a warp each), long rows (a block each), and a middle dim (columns).
      for (const Shape& shape : {Shape{6, 10}, Shape{3, 2500}, Shape{4, 7, 5}}) {
        Twin x = twin(shape, 100, l, d, -4, 4);
        for (int64_t dim : {int64_t(-1), int64_t(shape.size() == 3 ? 1 : 0)}) {
          CAPTURE(dim);
          check_grad([dim](const Tensor& t) { return softmax(t, dim); }, x, r);
          check_grad([dim](const Tensor& t) { return log_softmax(t, dim); }, x, r);
        }
      }
    }
  }
  // Fully masked rows: zeros / -inf, zero gradient; partly masked rows are ordinary.
  Tensor m = tensor({-INFINITY, -INFINITY, -INFINITY, 1, -INFINITY, 2}, {2, 3});
  Twin x{m, on_gpu(m)};
  check_matches(softmax(x.gpu, 1), softmax(x.cpu, 1), 1e-6, 1e-6);
  check_matches(log_softmax(x.gpu, 1), log_softmax(x.cpu, 1), 1e-6, 1e-6);
  check_matches(softmax(x.gpu, 0), softmax(x.cpu, 0), 1e-6, 1e-6);
  Tensor g = ones({2, 3});
  Tensor dc = empty({2, 3}), dg = empty({2, 3}, {.device = gpu()});
  softmax_backward_kernel(Device::cpu(), true, dc, g, log_softmax(x.cpu, 1), 1);
  softmax_backward_kernel(gpu(), true, dg, on_gpu(g), log_softmax(x.gpu, 1), 1);
  check_matches(dg, dc, 1e-6, 1e-6);
  for (Layout l : all_layouts()) {
    CAPTURE(layout_name(l));
    CHECK_GRADCHECK(
        [](const std::vector<Tensor>& t) {
          return through_gpu([](const std::vector<Tensor>& u) { return softmax(u[0], 1); }, t);
        },
        {leaf64({3, 4, 2}, 101, l)});
  }
}

TEST_CASE("cuda: layer_norm forward and backward match the CPU" * needs_gpu()) {
  for (DType d : {kFloat32, kFloat64}) {
    const double r = d == kFloat64 ? 1e-11 : 2e-5;
    for (const Shape& shape : {Shape{4, 6, 16}, Shape{3, 3000}}) {
      CAPTURE(d);
      CAPTURE(shape.back());
      const Shape ns{shape.back()};
      Twin x = twin(shape, 110, Layout::Permuted, d, 5, 7), w = twin(ns, 111, Layout::Contiguous, d),
           b = twin(ns, 112, Layout::Sliced, d);
      check_layer_grads(
          [&ns](const Tensor& t, const Tensor& wt, const Tensor& bt) { return layer_norm(t, ns, wt, bt); }, x, w, b, r);
      // Without affine parameters, and dbias alone.
      check_grad([&ns](const Tensor& t) { return layer_norm(t, ns); }, x, r);
    }
  }
  CHECK_GRADCHECK(
      [](const std::vector<Tensor>& t) {
        return through_gpu([](const std::vector<Tensor>& u) { return layer_norm(u[0], {4}, u[1], u[2]); }, t);
      },
      {leaf64({3, 4}, 113, Layout::Permuted), leaf64({4}, 114), leaf64({4}, 115)});
}

TEST_CASE("cuda: rms_norm forward and backward match the CPU" * needs_gpu()) {
  for (DType d : {kFloat32, kFloat64}) {
    const double r = d == kFloat64 ? 1e-11 : 2e-5;
    for (const Shape& shape : {Shape{4, 6, 16}, Shape{3, 3000}}) {
      CAPTURE(d);
      CAPTURE(shape.back());
      const Shape ns{shape.back()};
      Twin x = twin(shape, 116, Layout::Permuted, d, 5, 7), w = twin(ns, 117, Layout::Contiguous, d),
           b = twin(ns, 118, Layout::Sliced, d);
      check_layer_grads([&ns](const Tensor& t, const Tensor& wt, const Tensor& bt) { return rms_norm(t, ns, wt, bt); },
                        x, w, b, r);
      check_grad([&ns](const Tensor& t) { return rms_norm(t, ns); }, x, r);
    }
  }
  CHECK_GRADCHECK(
      [](const std::vector<Tensor>& t) {
        return through_gpu([](const std::vector<Tensor>& u) { return rms_norm(u[0], {4}, u[1], u[2]); }, t);
      },
      {leaf64({3, 4}, 119, Layout::Permuted), leaf64({4}, 114), leaf64({4}, 115)});
}

TEST_CASE("cuda: cross_entropy, nll_loss and mse_loss match the CPU" * needs_gpu()) {
  for (DType d : {kFloat32, kFloat64}) {
    const double r = d == kFloat64 ? 1e-12 : 1e-5;
    CAPTURE(d);
    Twin logits = twin({12, 7}, 120, Layout::Permuted, d, -3, 3);
    Tensor tc = randint(0, 7, {12}, {.dtype = kInt64});
    tc.data<int64_t>()[3] = -100;
    tc.data<int64_t>()[8] = -100;
    const Tensor tg = on_gpu(tc);
    for (double eps : {0.0, 0.1}) {
      for (Reduction red : {Reduction::Mean, Reduction::Sum, Reduction::None}) {
        CAPTURE(eps);
        CAPTURE(int(red));
        const CrossEntropyOptions o{.label_smoothing = eps, .reduction = red};
        check_grad([&](const Tensor& x) { return cross_entropy(x, x.device().is_cpu() ? tc : tg, o); }, logits, r);
      }
    }
    check_grad([&](const Tensor& x) { return nll_loss(log_softmax(x, 1), x.device().is_cpu() ? tc : tg); }, logits, r);
    // (N, C, d) with a long class dim (one block per row).
    Twin wide = twin({2, 1500, 3}, 121, Layout::Contiguous, d, -3, 3);
    Tensor t3 = randint(0, 1500, {2, 3}, {.dtype = kInt64});
    check_grad([&](const Tensor& x) { return cross_entropy(x, x.device().is_cpu() ? t3 : on_gpu(t3)); }, wide, r);
    Twin other = twin({5, 6}, 122, Layout::Sliced, d);
    check_grad([&](const Tensor& x) { return mse_loss(x, x.device().is_cpu() ? other.cpu : other.gpu); },
               twin({5, 6}, 123, Layout::Contiguous, d), r);
    check_grad(
        [&](const Tensor& x) { return mse_loss(x, x.device().is_cpu() ? other.cpu : other.gpu, Reduction::None); },
        twin({5, 6}, 124, Layout::Permuted, d), r);
  }
  // Every target ignored: Mean gives 0.
  Twin l = twin({3, 4}, 125);
  Tensor all_ignored = full({3}, -100, {.dtype = kInt64});
  check_matches(cross_entropy(l.gpu, on_gpu(all_ignored)), cross_entropy(l.cpu, all_ignored), 0, 0);
  CHECK_GRADCHECK(
      [](const std::vector<Tensor>& t) {
        return through_gpu(
            [](const std::vector<Tensor>& u) {
              return cross_entropy(u[0], tensor({2, 0, -100, 1}, {4}, {.dtype = kInt64, .device = Device::cuda(0)}),
                                   {.label_smoothing = 0.2});
            },
            t);
      },
      {leaf64({4, 3}, 126, Layout::Sliced)});
}

TEST_CASE("cuda: a bad target or index gives the CPU's error" * needs_gpu()) {
  Tensor logits = zeros({4, 5});
  Tensor t = tensor({1, 7, 2, -3}, {4}, {.dtype = kInt64});
  std::string cpu_error, gpu_error;
  try {
    cross_entropy(logits, t);
  } catch (const Error& e) {
    cpu_error = e.what();
  }
  try {
    cross_entropy(on_gpu(logits), on_gpu(t));
  } catch (const Error& e) {
    gpu_error = e.what();
  }
  CHECK(cpu_error == "cross_entropy: target 7 at position 1 is out of range for 5 classes (ignore_index is -100)");
  CHECK(gpu_error == cpu_error);
  Tensor w = zeros({6, 3});
  Tensor idx = tensor({0, 5, 9, 6}, {4}, {.dtype = kInt64});
  CHECK_THROWS_WITH_AS(embedding(on_gpu(w), on_gpu(idx)),
                       doctest::Contains("embedding: index 9 is out of range for 6 embeddings"), Error);
}

TEST_CASE("cuda: embedding forward and backward match the CPU" * needs_gpu()) {
  for (DType d : {kFloat32, kFloat64}) {
    CAPTURE(d);
    Twin w = twin({50, 24}, 130, Layout::Permuted, d);
    Tensor ic = randint(0, 50, {7, 30}, {.dtype = kInt64});  // many repeats
    const Tensor ig = on_gpu(ic);
    check_matches(embedding(w.gpu, ig), embedding(w.cpu, ic), 0, 0);
    for (bool deterministic : {true, false}) {
      CAPTURE(deterministic);
      cuda_set_deterministic(deterministic);
      for (int64_t pad : {int64_t(-1), int64_t(3)}) {
        Tensor wc = detach(w.cpu).set_requires_grad(true), wg = detach(w.gpu).set_requires_grad(true);
        Tensor g = rand({7, 30, 24}, {.dtype = d});
        backward(embedding(wc, ic, pad), g);
        backward(embedding(wg, ig, pad), on_gpu(g));
        // The deterministic form sums in the CPU's order and precision: bitwise equal.
        const double r = deterministic ? 0 : rtol_for(d);
        check_matches(wg.grad(), wc.grad(), r, r);
      }
    }
    cuda_set_deterministic(true);
  }
  Twin ints = int_twin({10, 4}, 131, -9, 9);
  Tensor i2 = tensor({9, 0, 3}, {3}, {.dtype = kInt64});
  check_matches(embedding(ints.gpu, on_gpu(i2)), embedding(ints.cpu, i2), 0, 0);
}

TEST_CASE("cuda: dropout draws the CPU's mask for the same seed" * needs_gpu()) {
  for (DType d : {kFloat32, kFloat64}) {
    CAPTURE(d);
    Twin x = twin({9, 31}, 140, Layout::Sliced, d);
    Generator gc(77), gg(77);
    Tensor xc = detach(x.cpu).set_requires_grad(true), xg = detach(x.gpu).set_requires_grad(true);
    Tensor yc = dropout(xc, 0.3, true, &gc), yg = dropout(xg, 0.3, true, &gg);
    check_matches(yg, yc, 0, 0);
    CHECK(gg.offset() == gc.offset());
    Tensor g = rand({9, 31}, {.dtype = d});
    backward(yc, g);
    backward(yg, on_gpu(g));
    check_matches(xg.grad(), xc.grad(), 0, 0);
  }
}

TEST_CASE("cuda: fused optimizer steps match the CPU" * needs_gpu()) {
  NoGradGuard no_grad;
  for (DType d : {kFloat32, kFloat64}) {
    CAPTURE(d);
    const double r = d == kFloat64 ? 1e-12 : 1e-5;
    Twin p = twin({33, 17}, 150, Layout::Contiguous, d), m = twin({33, 17}, 151, Layout::Contiguous, d, 0, 0.1),
         v = twin({33, 17}, 152, Layout::Contiguous, d, 0, 0.1), buf = twin({33, 17}, 153, Layout::Contiguous, d);
    for (int64_t step = 1; step <= 3; ++step) {
      Twin g = twin({33, 17}, 154 + uint64_t(step), Layout::Contiguous, d);
      for (bool decoupled : {true, false}) {
        const AdamHyper h{1e-2, 0.9, 0.999, 1e-8, 0.05, decoupled, step};
        adam_update_(p.cpu, g.cpu, m.cpu, v.cpu, h);
        adam_update_(p.gpu, g.gpu, m.gpu, v.gpu, h);
      }
      const SgdHyper s{0.05, 0.9, 0.1, 0.01, step == 2, step == 1};
      sgd_update_(p.cpu, g.cpu, buf.cpu, s);
      sgd_update_(p.gpu, g.gpu, buf.gpu, s);
      scale_(g.cpu, 0.5);
      scale_(g.gpu, 0.5);
      check_matches(g.gpu, g.cpu, r, r);
      CHECK(sum_of_squares(g.gpu) == doctest::Approx(sum_of_squares(g.cpu)).epsilon(1e-12));
    }
    check_matches(p.gpu, p.cpu, r, r);
    check_matches(m.gpu, m.cpu, r, r);
    check_matches(v.gpu, v.cpu, r, r);
    check_matches(buf.gpu, buf.cpu, r, r);
  }
}
