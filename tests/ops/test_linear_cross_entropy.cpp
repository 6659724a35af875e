// tests/ops/test_linear_cross_entropy.cpp — the chunked output layer +
// cross-entropy against linear + cross_entropy: bit for bit in one chunk,
// to float32 round-off in several (a GEMM's row is not bit-stable across row
// counts), every reduction, ignored
// rows, label smoothing, 3-D inputs; float64 gradchecks and second
// derivatives; errors.
#include "autograd/engine.h"
#include "ops/linalg.h"
#include "ops/linear_cross_entropy.h"
#include "ops/ops_testing.h"
#include "ops/view.h"
#include "support/testing.h"

using namespace ks;
using namespace ks::testing;

namespace {

struct Grads {
  Tensor loss, dx, dw, db;
};

Grads run(bool fused, const Tensor& x0, const Tensor& w0, const Tensor& b0, const Tensor& t,
          const CrossEntropyOptions& opts, int64_t chunk) {
  Tensor x = detach(x0), w = detach(w0), b = b0.defined() ? detach(b0) : Tensor();
  for (Tensor* p : {&x, &w, &b})
    if (p->defined()) p->set_requires_grad(true);
  const int64_t V = w.size(0);
  Tensor loss = fused ? linear_cross_entropy(x, w, b, t, opts, chunk)
                      : cross_entropy(reshape(linear(x, w, b), {t.numel(), V}), reshape(t, {t.numel()}), opts);
  if (opts.reduction == Reduction::None) loss = reshape(loss, t.sizes());
  Generator gen(5);
  const Tensor g = loss.dim() == 0 ? ones({}) : randn(loss.sizes(), {}, &gen);
  backward(loss, g);
  return {detach(loss), x.grad(), w.grad(), b.defined() ? b.grad() : Tensor()};
}

}  // namespace

TEST_CASE("linear_cross_entropy equals linear + cross_entropy: bit for bit in one chunk, to round-off in several") {
  Generator gen(3);
  const int64_t B = 3, T = 100, d = 64, V = 1000;
  const Tensor x = randn({B, T, d}, {}, &gen), w = mul(randn({V, d}, {}, &gen), 0.2), b = randn({V}, {}, &gen);
  Tensor t = randint(0, V, {B, T}, {.dtype = kInt64}, &gen);
  t.data<int64_t>()[5] = 0;  // ignored below
  t.data<int64_t>()[40] = 0;
  for (Reduction red : {Reduction::Mean, Reduction::Sum, Reduction::None})
    for (double eps : {0.0, 0.1})
      for (bool with_bias : {false, true})
        for (int64_t chunk : {1, 7, 64, 128, 0}) {
          CAPTURE(int(red));
          CAPTURE(eps);
          CAPTURE(with_bias);
          CAPTURE(chunk);
          const CrossEntropyOptions opts{.ignore_index = 0, .label_smoothing = eps, .reduction = red};
          const Tensor bias = with_bias ? b : Tensor();
          const Grads ref = run(false, x, w, bias, t, opts, chunk), got = run(true, x, w, bias, t, opts, chunk);
          if (chunk == 0) {  // one chunk: the very GEMMs of the unfused path
            CHECK(same_bits(got.loss, ref.loss));
            CHECK(same_bits(got.dx, ref.dx));
          }
          check_close(got.loss, ref.loss, 1e-6, 1e-6);
          check_close(got.dx, ref.dx, 5e-7, 1e-5);  // sums over 1000 classes
          check_close(got.dw, ref.dw, 4e-6, 1e-5);  // sums over 300 rows of terms ~0.1, with cancellation
          if (with_bias) check_close(got.db, ref.db, 4e-6, 1e-5);
        }
}

TEST_CASE("linear_cross_entropy: float64 gradients and second derivatives") {
  const Tensor t = from_vector(std::vector<int64_t>{2, 0, 4, 1, 3, 3, 0}, {7});
  for (int64_t chunk : {2, 0}) {
    CAPTURE(chunk);
    auto f = [&](const std::vector<Tensor>& in) {
      return linear_cross_entropy(in[0], in[1], in[2], t, {.ignore_index = 1, .label_smoothing = 0.05}, chunk);
    };
    const std::vector<Tensor> in{leaf64({7, 3}, 11), leaf64({5, 3}, 12), leaf64({5}, 13)};
    CHECK_GRADCHECK(f, in);
    CHECK_GRADGRADCHECK(f, in);
  }
}

TEST_CASE("linear_cross_entropy: a reduced loss's gradient scales with the incoming one (formed in forward)") {
  Generator gen(9);
  const Tensor x0 = randn({50, 16}, {}, &gen), w0 = randn({40, 16}, {}, &gen);
  const Tensor t = randint(0, 40, {50}, {.dtype = kInt64}, &gen);
  for (Reduction red : {Reduction::Mean, Reduction::Sum}) {
    CAPTURE(int(red));
    Tensor x = detach(x0), w = detach(w0), x1 = detach(x0), w1 = detach(w0);
    for (Tensor* p : {&x, &w, &x1, &w1}) p->set_requires_grad(true);
    backward(mul(linear_cross_entropy(x, w, Tensor(), t, {.reduction = red}, 16), -2.5));
    backward(mul(cross_entropy(linear(x1, w1), t, {.reduction = red}), -2.5));
    check_close(x.grad(), x1.grad(), 1e-6, 1e-5);
    check_close(w.grad(), w1.grad(), 1e-5, 1e-5);
  }
}

TEST_CASE("linear_cross_entropy: every row ignored gives 0 and zero gradients, as cross_entropy") {
  Tensor x = leaf64({4, 3}, 1), w = leaf64({5, 3}, 2);
  Tensor loss = linear_cross_entropy(x, w, Tensor(), full({4}, 7.0, {.dtype = kInt64}), {.ignore_index = 7}, 3);
  CHECK(loss.item() == 0.0);
  backward(loss);
  CHECK(sum(abs(x.grad())).item() == 0.0);
  CHECK(sum(abs(w.grad())).item() == 0.0);
}

TEST_CASE("linear_cross_entropy: errors name the problem") {
  const Tensor x = randn({4, 3}), w = randn({5, 3}), t = zeros({4}, {.dtype = kInt64});
  CHECK_THROWS_WITH(linear_cross_entropy(x, randn({5, 2}), Tensor(), t), doctest::Contains("does not fit weight"));
  CHECK_THROWS_WITH(linear_cross_entropy(x, w, Tensor(), zeros({3}, {.dtype = kInt64})),
                    doctest::Contains("do not match input"));
  CHECK_THROWS_WITH(linear_cross_entropy(x, w, randn({4}), t), doctest::Contains("bias must be"));
  CHECK_THROWS_WITH(linear_cross_entropy(x, w, Tensor(), zeros({4})), doctest::Contains("int64 class indices"));
  CHECK_THROWS_WITH(linear_cross_entropy(x, w, Tensor(), full({4}, 9.0, {.dtype = kInt64})),
                    doctest::Contains("cross_entropy"));
}
