// tests/ops/test_layer_norm.cpp — layer_norm: the checks every row norm passes
// (ops/norm_checks.h: float64 reference, gradchecks over layouts, thread-count
// independent parameter grads), and its own: the default eps, rows with a
// large common offset, errors.
#include "ops/layer_norm.h"
#include "ops/norm_checks.h"

using namespace ks;
using namespace ks::testing;

TEST_CASE("layer_norm matches a loop reference over 1 and 2 dims, with and without weight and bias") {
  check_norm_matches_reference(layer_norm, /*centred=*/true, 31);
  Tensor x = randn({3, 8});  // the default eps is 1e-5
  check_close(layer_norm(x, {8}), norm_rows_ref(x.to_vector<double>(), 8, {}, {}, 1e-5, true), 1e-5, 1e-5);
}

TEST_CASE("layer_norm gradchecks over layouts with and without weight and bias") {
  check_norm_gradchecks(layer_norm, 32);
}

TEST_CASE("layer_norm normalises rows with a large common offset in float32") {
  // 1e4 + noise of std 0.5: E[x²] - E[x]² would lose every digit of the variance in float32.
  Generator gen(41);
  Tensor x = add(mul(randn({4, 256}, {}, &gen), 0.5), 1e4);
  Tensor y = layer_norm(x, {256});
  check_close(y, norm_rows_ref(x.to_vector<double>(), 256, {}, {}, 1e-5, true), 1e-4, 1e-4);
  Tensor row_mean = div(sum(y, {1}), 256.0);
  Tensor row_var = div(sum(mul(y, y), {1}), 256.0);
  check_close(row_mean, {0, 0, 0, 0}, 1e-5);
  check_close(row_var, {1, 1, 1, 1}, 1e-3);
  // The gradients too: float32 against float64 on the same values, with a
  // spread (0.01) far below the offset (a float32-rounded mean would be off by
  // up to 5e-4 and put percent-level errors into dweight).
  Tensor xs = add(mul(randn({16, 128}, {}, &gen), 0.01), 1e4), g = randn({16, 128}, {}, &gen);
  Tensor x32 = detach(xs).set_requires_grad(true), x64 = detach(to(xs, kFloat64)).set_requires_grad(true);
  Tensor w32 = ones({128}, {.requires_grad = true}), w64 = ones({128}, {.dtype = kFloat64, .requires_grad = true});
  backward(layer_norm(x32, {128}, w32), g);
  backward(layer_norm(x64, {128}, w64), to(g, kFloat64));
  check_close(x32.grad(), x64.grad(), 1e-3, 1e-4);  // dx is O(rstd) = O(100)
  check_close(w32.grad(), w64.grad(), 1e-4, 1e-5);
  // A constant row has zero variance: the output is 0, not NaN.
  check_close(layer_norm(full({1, 8}, 1e4), {8}), std::vector<double>(8, 0.0));
}

TEST_CASE("layer_norm parameter gradients do not depend on the thread count") {
  check_norm_param_grads_thread_independent(layer_norm, 42);
}

TEST_CASE("layer_norm rejects mismatched shapes and dtypes by name") {
  check_norm_errors(layer_norm, "layer_norm");
  CHECK_THROWS_WITH_AS(layer_norm(zeros({2, 3, 5}), {}), doctest::Contains("normalized_shape [] does not match"),
                       Error);
}
