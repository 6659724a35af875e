// tests/ops/test_binary.cpp — add/sub/mul/div: forward against loops,
// broadcasting, gradchecks over layouts, and errors.
#include "support/testing.h"

using namespace ks;
using namespace ks::testing;

TEST_CASE("binary ops broadcast and match a loop reference") {
  Tensor a = tensor({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = tensor({10, 20, 30}, {3});
  check_close(add(a, b), {11, 22, 33, 14, 25, 36});
  check_close(sub(a, b), {-9, -18, -27, -6, -15, -24});
  check_close(mul(a, b), {10, 40, 90, 40, 100, 180});
  check_close(div(b, a), {10, 10, 10, 2.5, 4, 5});
  Tensor col = tensor({1, 2}, {2, 1});
  CHECK(add(col, b).sizes() == Shape{2, 3});
  check_close(add(col, b), {11, 21, 31, 12, 22, 32});
  check_close(a * 2.0 + 1.0, {3, 5, 7, 9, 11, 13});
  check_close(1.0 + a / 2.0, {1.5, 2, 2.5, 3, 3.5, 4});
}

TEST_CASE("binary ops gradcheck with broadcast and non-contiguous inputs") {
  for (Layout l : all_layouts()) {
    CAPTURE(layout_name(l));
    Tensor a = leaf64({3, 4}, 1, l);
    Tensor b = leaf64({4}, 2, l);
    Tensor c = leaf64({3, 1}, 3, l, 0.5, 2.0);
    CHECK_GRADCHECK([](const std::vector<Tensor>& x) { return add(x[0], x[1]); }, {a, b});
    CHECK_GRADCHECK([](const std::vector<Tensor>& x) { return sub(x[0], x[1]); }, {a, c});
    CHECK_GRADCHECK([](const std::vector<Tensor>& x) { return mul(x[0], x[1]); }, {a, b});
    CHECK_GRADCHECK([](const std::vector<Tensor>& x) { return div(x[0], x[1]); }, {a, c});
    CHECK_GRADCHECK([](const std::vector<Tensor>& x) { return mul(div(x[0], 3.0) - 1.0, 2.0); }, {a});
  }
  // An expanded input: expand inside f.
  Tensor v = leaf64({1, 4}, 4);
  CHECK_GRADCHECK([](const std::vector<Tensor>& x) { return mul(expand(x[0], {3, 4}), x[0]); }, {v});
}

TEST_CASE("binary ops reject bad shapes and dtypes by name") {
  CHECK_THROWS_WITH_AS(add(zeros({2, 3}), zeros({4})),
                       "add: shapes [2, 3] and [4] are not broadcastable (dim -1: 3 vs 4)", Error);
  CHECK_THROWS_WITH_AS(mul(zeros({2}), zeros({2}, {.dtype = kFloat64})),
                       "mul: dtype mismatch, float32 [2] and float64 [2]", Error);
  CHECK_THROWS_WITH_AS(div(zeros({2}, {.dtype = kInt64}), ones({2}, {.dtype = kInt64})),
                       doctest::Contains("integer division"), Error);
}
