// tests/ops/test_sum.cpp — sum over dims (row, column and strided layouts) and sum_to.
#include "support/testing.h"

using namespace ks;
using namespace ks::testing;

TEST_CASE("sum over any dims matches a loop reference") {
  Tensor x = view(arange(24, {.dtype = kFloat64}), {2, 3, 4});
  CHECK(sum(x).item() == 276);
  check_close(sum(x, {2}), {6, 22, 38, 54, 70, 86});
  check_close(sum(x, {0}), {12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 32, 34});
  check_close(sum(x, {0, 2}), {60, 92, 124});
  check_close(sum(x, {-1, 0}, true), {60, 92, 124});
  CHECK(sum(x, {1}, true).sizes() == Shape{2, 1, 4});
  check_close(sum(permute(x, {2, 0, 1}), {1}), {12, 20, 28, 14, 22, 30, 16, 24, 32, 18, 26, 34});
  // A long float32 sum keeps its digits.
  Tensor big = full({1 << 22}, 0.1);
  CHECK(sum(big).item() == doctest::Approx(419430.4).epsilon(1e-6));
  CHECK(sum(zeros({0, 3}), {0}).sizes() == Shape{3});
}

TEST_CASE("sum gradchecks and sum_to") {
  for (Layout l : all_layouts()) {
    CAPTURE(layout_name(l));
    Tensor x = leaf64({2, 3, 4}, 9, l);
    using V = const std::vector<Tensor>&;
    CHECK_GRADCHECK([](V a) { return sum(a[0]); }, {x});
    CHECK_GRADCHECK([](V a) { return sum(a[0], {0, 2}); }, {x});
    CHECK_GRADCHECK([](V a) { return sum(a[0], {1}, true); }, {x});
  }
  Tensor g = ones({4, 2, 3});
  CHECK(sum_to(g, {2, 1}).sizes() == Shape{2, 1});
  check_close(sum_to(g, {2, 1}), {12, 12});
  CHECK_THROWS_WITH_AS(sum(zeros({2}), {0, 0}), "sum: dim 0 appears more than once in [0, 0]", Error);
}
