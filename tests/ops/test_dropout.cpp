// tests/ops/test_dropout.cpp — dropout: the mask follows the seed (and equals
// the bernoulli factory's draw), keeps about 1 - p, preserves the
// expectation, is the identity in eval, and backward reuses the mask; the
// CPU kernel draws the formulas' mask.
#include "ops/dropout.h"

#include "core/parallel.h"
#include "ops/cpu/loops.h"
#include "ops/dropout_formulas.h"
#include "ops/ops_testing.h"
#include "support/testing.h"

using namespace ks;
using namespace ks::testing;

namespace {
using V = const std::vector<Tensor>&;

// Fraction of nonzero elements.
double kept_fraction(const Tensor& y) {
  int64_t kept = 0;
  for (double v : y.to_vector<double>()) kept += v != 0;
  return double(kept) / double(y.numel());
}
}  // namespace

TEST_CASE("dropout masks follow the seed and match bernoulli(1 - p) from the same stream") {
  Tensor x = add(rand({37, 29}, {}, nullptr), 1.0);  // no zeros, so zeros in y mark dropped elements
  Generator g1(7), g2(7), g3(8);
  Tensor a = dropout(x, 0.3, true, &g1), b = dropout(x, 0.3, true, &g2), c = dropout(x, 0.3, true, &g3);
  CHECK(a.to_vector<float>() == b.to_vector<float>());
  CHECK(a.to_vector<float>() != c.to_vector<float>());
  CHECK(dropout(x, 0.3, true, &g1).to_vector<float>() != a.to_vector<float>());  // the generator advanced

  Generator g4(7);
  std::vector<double> keep = bernoulli(x.sizes(), 0.7, {}, &g4).to_vector<double>();
  std::vector<double> xv = x.to_vector<double>(), av = a.to_vector<double>();
  for (size_t i = 0; i < xv.size(); ++i) {
    CAPTURE(i);
    CHECK(av[i] == doctest::Approx(keep[i] * xv[i] / 0.7).epsilon(1e-6));
  }
  // A permuted input draws by logical (row-major) position.
  Generator g5(7);
  Tensor xt = contiguous(transpose(x, 0, 1));
  Tensor at = dropout(transpose(xt, 0, 1), 0.3, true, &g5);
  CHECK(at.to_vector<float>() == a.to_vector<float>());
}

TEST_CASE("dropout keeps about 1 - p, preserves the expectation and is thread-count independent") {
  Tensor x = ones({200000});
  for (double p : {0.1, 0.5, 0.9}) {
    CAPTURE(p);
    Generator gen(100 + uint64_t(p * 10));
    Tensor y = dropout(x, p, true, &gen);
    CHECK(kept_fraction(y) == doctest::Approx(1 - p).epsilon(0.02));  // >= 3 sigma at 2e5 draws
    CHECK(sum(y).item() / 200000.0 == doctest::Approx(1.0).epsilon(0.02));
  }
  auto [serial, threaded] = on_one_and_many_threads([&] {
    Generator gen(9);
    return dropout(x, 0.5, true, &gen).to_vector<float>();
  });
  CHECK(serial == threaded);
}

TEST_CASE("dropout is the identity in eval mode and for p = 0, p = 1 gives zeros") {
  Tensor x = leaf64({3, 4}, 51);
  CHECK(dropout(x, 0.5, false).is_same(x));
  CHECK(dropout(x, 0.0, true).is_same(x));
  Tensor y = dropout(x, 1.0, true);
  check_close(y, std::vector<double>(12, 0.0));
  backward(sum(y));
  check_close(x.grad(), std::vector<double>(12, 0.0));
}

TEST_CASE("dropout backward multiplies by the saved mask and scale") {
  Tensor x = leaf64({6, 5}, 52, 0.5, 1.5);
  Generator gen(53);
  Tensor y = dropout(x, 0.4, true, &gen);
  Tensor g = tensor({1, 2, 3, 4, 5}, {5}, {.dtype = kFloat64});
  backward(y, expand(g, {6, 5}));  // a stride-0 incoming gradient
  std::vector<double> yv = y.to_vector<double>(), dx = x.grad().to_vector<double>();
  for (size_t i = 0; i < yv.size(); ++i) {
    CAPTURE(i);
    CHECK(dx[i] == doctest::Approx(yv[i] != 0 ? double(i % 5 + 1) / 0.6 : 0.0));
  }
  // With the generator reseeded inside f the mask is fixed, so gradcheck applies.
  for (Layout l : all_layouts()) {
    CAPTURE(layout_name(l));
    Tensor v = leaf64({4, 6}, 54, l);
    CHECK_GRADCHECK(
        [](V a) {
          Generator fixed(55);
          return dropout(a[0], 0.3, true, &fixed);
        },
        {v});
  }
  Tensor row = leaf64({1, 6}, 56);
  CHECK_GRADCHECK(
      [](V a) {
        Generator fixed(57);
        return dropout(expand(a[0], {4, 6}), 0.5, true, &fixed);
      },
      {row});
}

TEST_CASE("the CPU's dropout kernel draws the formulas' mask bit for bit, at any size and thread count") {
  // ops/cpu/dropout.cpp draws 64 at a time (core/random_bulk.h); the formulas'
  // forward, one Philox block per index, is what the GPU runs.
  const int saved = num_threads();
  for (int threads : {1, 2})
    for (DType dtype : {kFloat32, kFloat64})
      for (int64_t n : {1, 3, 63, 64, 65, 1000, 8191, 8193, 50001}) {
        CAPTURE(threads);
        CAPTURE(name(dtype));
        CAPTURE(n);
        set_num_threads(threads);
        Tensor x = add(rand({n}, {.dtype = dtype}, nullptr), 1.0);
        for (uint64_t first_block : {0ull, 5ull, 0xfffffff0ull}) {
          Tensor out = Tensor::empty({n}, dtype, x.device()), mask = Tensor::empty({n}, kBool, x.device());
          Tensor want_out = Tensor::empty({n}, dtype, x.device()), want_mask = Tensor::empty({n}, kBool, x.device());
          dropout_kernel(x.device(), out, mask, x, 0.7, 1 / 0.7, 99, first_block);
          dropout_formulas::dropout_kernels<cpu::CpuLoops>::forward(want_out, want_mask, x, 0.7, 1 / 0.7, 99,
                                                                    first_block);
          CHECK(out.to_vector<double>() == want_out.to_vector<double>());
          CHECK(mask.to_vector<double>() == want_mask.to_vector<double>());
        }
      }
  set_num_threads(saved);
}

TEST_CASE("dropout rejects a bad p and non-floating inputs") {
  CHECK_THROWS_WITH_AS(dropout(ones({2}), 1.5, true), "dropout: p must be in [0, 1], got 1.5", Error);
  CHECK_THROWS_WITH_AS(dropout(ones({2}), -0.1, false), "dropout: p must be in [0, 1], got -0.1", Error);
  CHECK_THROWS_WITH_AS(dropout(ones({2}, {.dtype = kInt64}), 0.5, true),
                       "dropout: expected a floating tensor, got int64 [2]", Error);
}
